#include "ddp_sim.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace ncclwatch::analysis::testing {
namespace {

constexpr uint64_t kComm = 0xC0FFEE;
constexpr int64_t kEpoch = 1'000'000'000;  // true time of the first step

struct Rng {
  uint64_t s;
  int64_t below(int64_t n) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return n > 0 ? static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(n)) : 0;
  }
  double unit() {  // [0, 1)
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};

// A noise delay of amplitude `a` ns (see Noise); `per_call` for the call-entry part.
int64_t noise_delay(Rng& rng, Noise kind, double a, bool per_call) {
  if (a <= 0) return 0;
  double d = 0;
  switch (kind) {
    case Noise::kNone:
      break;
    case Noise::kJitter:
      if (!per_call) d = rng.unit() * a;
      break;
    case Noise::kGc:
      if (!per_call && rng.unit() < 0.1) d = a / 10 * std::pow(1 - rng.unit(), -1 / 1.5);
      break;
    case Noise::kContention:
      if (!per_call) {
        d = -std::log(1 - rng.unit()) * a / 4;
      } else if (rng.unit() < 0.2) {
        d = -std::log(1 - rng.unit()) * a / 8;
      }
      break;
  }
  return static_cast<int64_t>(std::min(d, a));
}

struct RankState {
  int64_t host_ready = kEpoch;  // when the host may issue the next step (true time)
  int64_t compute_free = kEpoch;
  int64_t comm_free = kEpoch;
  std::vector<model::KernelEvent> kernels;
  uint32_t next_corr = 1;
};

}  // namespace

const char* to_string(Noise n) {
  switch (n) {
    case Noise::kJitter:
      return "jitter";
    case Noise::kGc:
      return "gc-pauses";
    case Noise::kContention:
      return "cpu-contention";
    case Noise::kNone:
      break;
  }
  return "none";
}

std::string host_name(int index) {
  return index < 26 ? std::string("node-") + static_cast<char>('a' + index)
                    : "node-" + std::to_string(index + 1);
}

SimParams sim_params(int nranks, int per_host) {
  SimParams p;
  for (int r = 0; r < nranks; ++r) {
    SimRank s;
    s.host = host_name(r / per_host);
    p.ranks.push_back(s);
  }
  return p;
}

SimJob simulate(const SimParams& p) {
  SimJob out;
  const std::size_t n = p.ranks.size();
  std::vector<RankState> st(n);
  Rng rng{p.seed * 0x9E3779B97F4A7C15ull + 7};
  out.job.job = "sim";
  out.job.ranks.resize(n);
  out.clocks.rank_offset_ns.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    model::RankTrace& t = out.job.ranks[r];
    t.info.rank = static_cast<int32_t>(r);
    t.info.world_size = static_cast<int32_t>(n);
    t.info.host = p.ranks[r].host;
    t.info.timing = p.host_only ? model::TimingSource::kHostOnly
                    : p.lite    ? model::TimingSource::kEvents
                                : model::TimingSource::kCupti;
    t.names = {"", "compute_kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ProfilerStep#"};
    model::CommInfo c;
    c.id = kComm;
    c.nranks = static_cast<int32_t>(n);
    c.rank = static_cast<int32_t>(r);
    t.comms.push_back(c);
    out.clocks.rank_offset_ns[r] = -p.ranks[r].clock_skew_ns;
  }
  auto jit = [&]() { return rng.below(p.jitter_ns); };
  const double amp = p.noise_frac * static_cast<double>(p.nominal_step_ns());
  auto scaled = [&](std::size_t r, int64_t ns) {
    return static_cast<int64_t>(static_cast<double>(ns) * p.ranks[r].compute_scale) + jit();
  };
  auto add_kernel = [&](std::size_t r, int64_t b, int64_t e, bool nccl, format::ActivityKind k) {
    model::KernelEvent ke;
    ke.start_ns = b;
    ke.end_ns = e;
    ke.nccl = nccl;
    ke.kind = k;
    ke.name = nccl ? 2 : 1;
    ke.stream = nccl ? 2 : 1;
    ke.correlation = st[r].next_corr++;
    st[r].kernels.push_back(ke);
    return ke.correlation;
  };
  uint64_t seq = 0;
  std::vector<std::vector<uint32_t>> corr_of_call(n);
  for (int s = 0; s < p.steps; ++s) {
    std::vector<std::vector<int64_t>> ready(n, std::vector<int64_t>(p.buckets));
    std::vector<int64_t> step_begin(n);
    for (std::size_t r = 0; r < n; ++r) {
      const SimRank& sr = p.ranks[r];
      RankState& rs = st[r];
      int64_t stall = sr.host_stall_ns + (sr.host_stall_ns ? jit() : 0);
      if (sr.spike_every > 0 && (s + 1) % sr.spike_every == 0) stall += sr.spike_ns;
      if (s == sr.extra_spike_step) stall += sr.spike_ns;
      stall += noise_delay(rng, p.noise, amp, false);
      step_begin[r] = rs.host_ready;
      const int64_t issue = rs.host_ready + stall;
      int64_t t = std::max(issue, rs.compute_free);
      add_kernel(r, t, t + p.memcpy_ns, false, format::ActivityKind::kMemcpy);
      t += p.memcpy_ns;
      const int64_t f = scaled(r, p.forward_ns);
      add_kernel(r, t, t + f, false, format::ActivityKind::kKernel);
      t += f;
      for (int k = 0; k < p.buckets; ++k) {
        const int64_t g = scaled(r, p.segment_ns);
        add_kernel(r, t, t + g, false, format::ActivityKind::kKernel);
        t += g;
        ready[r][k] = t;
      }
      rs.compute_free = t;
    }
    // All-reduces, bucket by bucket across ranks (the end of one depends on every member).
    for (int k = 0; k < p.buckets; ++k) {
      std::vector<int64_t> arrival(n), enter(n);
      int64_t last = 0;
      for (std::size_t r = 0; r < n; ++r) {
        const int64_t ready_at = p.after_backward ? ready[r][p.buckets - 1] : ready[r][k];
        arrival[r] = std::max(ready_at, st[r].comm_free);
        // A descheduled host enters the call late; the kernel cannot start before its launch.
        const int64_t late_entry = noise_delay(rng, p.noise, amp, true);
        enter[r] = arrival[r] - p.launch_lead_ns + late_entry;
        arrival[r] = std::max(arrival[r], enter[r] + p.launch_lead_ns);
        last = std::max(last, arrival[r]);
      }
      const int64_t end = last + p.transfer_ns;
      model::CollectiveInstance inst;
      inst.comm_id = kComm;
      inst.seq = seq++;
      inst.func = format::Func::kAllReduce;
      inst.bytes = p.bucket_bytes;
      inst.first_member = static_cast<uint32_t>(out.match.members.size());
      inst.nmembers = static_cast<uint32_t>(n);
      inst.expected = static_cast<uint32_t>(n);
      for (std::size_t r = 0; r < n; ++r) {
        const int64_t skew = p.ranks[r].clock_skew_ns;
        model::RankTrace& t = out.job.ranks[r];
        model::CallEvent c;
        c.enter_ns = enter[r] + skew;
        c.exit_ns = c.enter_ns + 5'000;
        c.comm_id = kComm;
        c.seq = inst.seq;
        c.count = p.bucket_bytes / 4;
        c.datatype = 7;  // float32: bytes() == bucket_bytes
        c.func = format::Func::kAllReduce;
        uint32_t corr = 0;
        if (!p.host_only) {
          c.gpu_start_ns = arrival[r] + skew;
          c.gpu_end_ns = end + skew;
          if (!p.lite) corr = add_kernel(r, arrival[r], end, true, format::ActivityKind::kKernel);
        }
        corr_of_call[r].push_back(corr);
        out.match.members.push_back(
            {static_cast<uint32_t>(r), static_cast<uint32_t>(t.calls.size())});
        t.calls.push_back(c);
        st[r].comm_free = end;
      }
      out.match.instances.push_back(inst);
    }
    for (std::size_t r = 0; r < n; ++r) {
      RankState& rs = st[r];
      const int64_t b = std::max(rs.compute_free, rs.comm_free);
      const int64_t o = scaled(r, p.optimizer_ns);
      add_kernel(r, b, b + o, false, format::ActivityKind::kKernel);
      rs.compute_free = b + o;
      rs.host_ready = b + o;  // the host syncs on the loss at the end of the step
      if (p.step_ranges) {
        const int64_t skew = p.ranks[r].clock_skew_ns;
        model::RangeEvent re;
        re.start_ns = step_begin[r] + skew;
        re.end_ns = rs.host_ready + skew;
        re.name = static_cast<uint32_t>(out.job.ranks[r].names.size());
        out.job.ranks[r].names.push_back("ProfilerStep#" + std::to_string(s));
        out.job.ranks[r].ranges.push_back(re);
      }
    }
  }
  for (std::size_t r = 0; r < n; ++r) {
    model::RankTrace& t = out.job.ranks[r];
    if (p.host_only || p.lite) continue;
    auto& ks = st[r].kernels;
    std::sort(ks.begin(), ks.end(), [](const model::KernelEvent& a, const model::KernelEvent& b) {
      return a.start_ns < b.start_ns;
    });
    std::map<uint32_t, int32_t> index_of;
    for (std::size_t i = 0; i < ks.size(); ++i) {
      ks[i].start_ns += p.ranks[r].clock_skew_ns;
      ks[i].end_ns += p.ranks[r].clock_skew_ns;
      index_of[ks[i].correlation] = static_cast<int32_t>(i);
    }
    for (std::size_t c = 0; c < t.calls.size(); ++c) {
      const int32_t k = index_of[corr_of_call[r][c]];
      t.calls[c].kernel = k;
      ks[static_cast<std::size_t>(k)].call = static_cast<int32_t>(c);
    }
    t.kernels = std::move(ks);
  }
  model::CommSummary cs;
  cs.id = kComm;
  cs.nranks = static_cast<int32_t>(n);
  for (std::size_t r = 0; r < n; ++r) cs.ranks.push_back(static_cast<int32_t>(r));
  cs.instances = out.match.instances.size();
  out.match.comms.push_back(cs);
  return out;
}

}  // namespace ncclwatch::analysis::testing

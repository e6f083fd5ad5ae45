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
  int64_t pair_free[2] = {kEpoch, kEpoch};  // pair links: partition A's and B's stream
  int64_t last_enter = 0;                   // pair links: calls enter in issue order
  std::vector<model::KernelEvent> kernels;
  uint32_t next_corr = 1;
};

// Pair links: the groups of adjacent host indices of partition A (offset 0) or B (offset 1);
// groups of two, an odd host left over joins the last group.
std::vector<std::vector<int>> host_groups(int hosts, int offset) {
  std::vector<std::vector<int>> out;
  for (int i = 0; i + 1 < hosts; i += 2)
    out.push_back({(i + offset) % hosts, (i + 1 + offset) % hosts});
  if (hosts % 2 == 1 && !out.empty()) out.back().push_back((hosts - 1 + offset) % hosts);
  return out;
}

uint64_t pair_comm_id(int partition, std::size_t group, int local) {
  return (static_cast<uint64_t>(partition + 1) << 40) | (static_cast<uint64_t>(group) << 16) |
         static_cast<uint64_t>(local);
}

struct PairComm {
  uint64_t id = 0;
  int partition = 0;                 // 0: A, 1: B (its own stream)
  std::vector<std::size_t> members;  // rank indices, by host
  bool slow = false;                 // includes the host with the slow NIC
};

std::vector<PairComm> pair_comms(const SimParams& p) {
  std::vector<std::string> hosts;  // in order of first appearance
  std::vector<int> host_of(p.ranks.size()), local_of(p.ranks.size());
  std::vector<int> per_host;
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    const auto it = std::find(hosts.begin(), hosts.end(), p.ranks[r].host);
    host_of[r] = static_cast<int>(it - hosts.begin());
    if (it == hosts.end()) hosts.push_back(p.ranks[r].host), per_host.push_back(0);
    local_of[r] = per_host[static_cast<std::size_t>(host_of[r])]++;
  }
  std::vector<PairComm> out;
  const int nhosts = static_cast<int>(hosts.size());
  const int locals = *std::max_element(per_host.begin(), per_host.end());
  for (int part = 0; part < 2; ++part) {
    const auto groups = host_groups(nhosts, part);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (int j = 0; j < locals; ++j) {
        PairComm pc;
        pc.id = pair_comm_id(part, g, j);
        pc.partition = part;
        for (int h : groups[g]) {
          pc.slow = pc.slow || h == p.slow_link_host;
          for (std::size_t r = 0; r < p.ranks.size(); ++r) {
            if (host_of[r] == h && local_of[r] == j) pc.members.push_back(r);
          }
        }
        if (pc.members.size() >= 2) out.push_back(std::move(pc));
      }
    }
  }
  return out;
}

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

std::vector<int> hosts_sharing_links(int hosts, int host) {
  std::vector<int> out;
  for (int part = 0; part < 2; ++part) {
    for (const auto& g : host_groups(hosts, part)) {
      if (std::find(g.begin(), g.end(), host) == g.end()) continue;
      for (int h : g) {
        if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
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
  const std::vector<PairComm> pairs = p.pair_links ? pair_comms(p) : std::vector<PairComm>{};
  for (const PairComm& pc : pairs) {
    for (std::size_t i = 0; i < pc.members.size(); ++i) {
      model::CommInfo c;
      c.id = pc.id;
      c.nranks = static_cast<int32_t>(pc.members.size());
      c.rank = static_cast<int32_t>(i);
      out.job.ranks[pc.members[i]].comms.push_back(c);
    }
  }
  auto jit = [&]() { return rng.below(p.jitter_ns); };
  const double amp = p.noise_frac * static_cast<double>(p.nominal_step_ns());
  auto scaled = [&](std::size_t r, int64_t ns) {
    return static_cast<int64_t>(static_cast<double>(ns) * p.ranks[r].compute_scale) + jit();
  };
  auto add_kernel = [&](std::size_t r, int64_t b, int64_t e, bool nccl, format::ActivityKind k,
                        uint32_t stream = 0) {
    model::KernelEvent ke;
    ke.start_ns = b;
    ke.end_ns = e;
    ke.nccl = nccl;
    ke.kind = k;
    ke.name = nccl ? 2 : 1;
    ke.stream = stream ? stream : nccl ? 2 : 1;
    ke.correlation = st[r].next_corr++;
    st[r].kernels.push_back(ke);
    return ke.correlation;
  };
  std::map<uint64_t, uint64_t> next_seq;  // per communicator, as NCCL counts
  std::vector<std::vector<uint32_t>> corr_of_call(n);
  std::vector<std::size_t> all_ranks(n);
  for (std::size_t r = 0; r < n; ++r) all_ranks[r] = r;
  // One collective instance on `comm`: every member's call (entered at enter[r]) and, with GPU
  // timing, its kernel from arrival[r] to `end` on `stream`; arrays are indexed by rank index.
  auto emit = [&](uint64_t comm, const std::vector<std::size_t>& members,
                  const std::vector<int64_t>& arrival, const std::vector<int64_t>& enter,
                  int64_t end, uint64_t bytes, uint32_t stream) {
    model::CollectiveInstance inst;
    inst.comm_id = comm;
    inst.seq = next_seq[comm]++;
    inst.func = format::Func::kAllReduce;
    inst.bytes = bytes;
    inst.first_member = static_cast<uint32_t>(out.match.members.size());
    inst.nmembers = static_cast<uint32_t>(members.size());
    inst.expected = static_cast<uint32_t>(members.size());
    for (std::size_t r : members) {
      const int64_t skew = p.ranks[r].clock_skew_ns;
      model::RankTrace& t = out.job.ranks[r];
      model::CallEvent c;
      c.enter_ns = enter[r] + skew;
      c.exit_ns = c.enter_ns + 5'000;
      c.comm_id = comm;
      c.seq = inst.seq;
      c.count = bytes / 4;
      c.datatype = 7;  // float32: bytes() == bytes
      c.func = format::Func::kAllReduce;
      uint32_t corr = 0;
      if (!p.host_only) {
        c.gpu_start_ns = arrival[r] + skew;
        c.gpu_end_ns = end + skew;
        if (!p.lite)
          corr = add_kernel(r, arrival[r], end, true, format::ActivityKind::kKernel, stream);
      }
      corr_of_call[r].push_back(corr);
      out.match.members.push_back(
          {static_cast<uint32_t>(r), static_cast<uint32_t>(t.calls.size())});
      t.calls.push_back(c);
    }
    out.match.instances.push_back(inst);
  };
  // Pair links, one step's buckets: partition A's then B's all-reduce of each bucket, entered
  // by the host once the bucket is ready, started when the comm's own stream is free.
  std::vector<int64_t> p_arrival(n), p_enter(n);
  auto pair_buckets = [&](const std::vector<std::vector<int64_t>>& ready) {
    for (int k = 0; k < p.buckets; ++k) {
      for (int part = 0; part < 2; ++part) {
        for (std::size_t r = 0; r < n; ++r) {
          const int64_t entry = ready[r][static_cast<std::size_t>(k)] - p.launch_lead_ns +
                                noise_delay(rng, p.noise, amp, true);
          p_enter[r] = std::max(entry, st[r].last_enter + 10'000);
          st[r].last_enter = p_enter[r];
        }
        for (const PairComm& pc : pairs) {
          if (pc.partition != part) continue;
          int64_t last = 0;
          for (std::size_t r : pc.members) {
            p_arrival[r] = std::max(p_enter[r] + p.launch_lead_ns, st[r].pair_free[part]);
            last = std::max(last, p_arrival[r]);
          }
          const double slow = pc.slow ? p.link_slowdown : 1.0;
          // Transfers vary too (other traffic on the fabric): up to noise_frac of their length.
          const int64_t transfer = static_cast<int64_t>(static_cast<double>(p.transfer_ns) * slow *
                                                        (1.0 + p.noise_frac * rng.unit())) +
                                   jit();
          const int64_t end = last + transfer;
          emit(pc.id, pc.members, p_arrival, p_enter, end, p.bucket_bytes,
               3 + static_cast<uint32_t>(part));
          for (std::size_t r : pc.members) st[r].pair_free[part] = end;
        }
      }
    }
  };
  for (int s = 0; s < p.steps; ++s) {
    std::vector<std::vector<int64_t>> ready(n, std::vector<int64_t>(p.buckets));
    std::vector<int64_t> step_begin(n);
    for (std::size_t r = 0; r < n; ++r) {
      const SimRank& sr = p.ranks[r];
      RankState& rs = st[r];
      int64_t stall = sr.host_stall_ns + (sr.host_stall_ns ? jit() : 0);
      if (sr.spike_every > 0 && (s + 1 + sr.spike_phase) % sr.spike_every == 0)
        stall += sr.spike_ns;
      if (s == sr.extra_spike_step) stall += sr.extra_spike_ns ? sr.extra_spike_ns : sr.spike_ns;
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
    if (p.pair_links) {
      pair_buckets(ready);
    } else {
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
        emit(kComm, all_ranks, arrival, enter, end, p.bucket_bytes, 2);
        for (std::size_t r = 0; r < n; ++r) st[r].comm_free = end;
      }
    }
    for (std::size_t r = 0; r < n; ++r) {
      RankState& rs = st[r];
      const int64_t b = std::max({rs.compute_free, rs.comm_free, rs.pair_free[0], rs.pair_free[1]});
      const int64_t o = scaled(r, p.optimizer_ns);
      add_kernel(r, b, b + o, false, format::ActivityKind::kKernel);
      rs.compute_free = b + o;
      rs.host_ready = b + o;  // the host syncs on the loss at the end of the step
    }
    if (p.pair_links) {  // ... after an all-reduce of it over every rank
      int64_t last = 0;
      for (std::size_t r = 0; r < n; ++r) {
        p_enter[r] =
            std::max(st[r].host_ready - p.launch_lead_ns + noise_delay(rng, p.noise, amp, true),
                     st[r].last_enter + 10'000);
        st[r].last_enter = p_enter[r];
        p_arrival[r] = std::max(p_enter[r] + p.launch_lead_ns, st[r].comm_free);
        last = std::max(last, p_arrival[r]);
      }
      const int64_t end = last + p.loss_transfer_ns;
      emit(kComm, all_ranks, p_arrival, p_enter, end, 4, 2);
      for (std::size_t r = 0; r < n; ++r) st[r].comm_free = st[r].host_ready = end;
    }
    for (std::size_t r = 0; r < n; ++r) {
      RankState& rs = st[r];
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
  cs.instances = next_seq[kComm];
  out.match.comms.push_back(cs);
  for (const PairComm& pc : pairs) {
    model::CommSummary c;
    c.id = pc.id;
    c.nranks = static_cast<int32_t>(pc.members.size());
    for (std::size_t r : pc.members) c.ranks.push_back(static_cast<int32_t>(r));
    c.instances = next_seq[pc.id];
    out.match.comms.push_back(c);
  }
  return out;
}

}  // namespace ncclwatch::analysis::testing

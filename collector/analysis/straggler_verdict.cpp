#include "analysis/straggler_verdict.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "analysis/units.h"

namespace ncclwatch::analysis {
namespace {

struct StepMetrics {
  double compute = 0, idle = 0, idle_before = 0;
  std::size_t steps = 0;
};

// Mean per-step GPU figures of one rank over its steady steps that `keep` accepts.
template <typename Keep>
StepMetrics mean_metrics(const RankOverlap& o, Keep keep) {
  StepMetrics m;
  for (const StepOverlap& s : o.steps) {
    if (s.warmup || !keep(s.index)) continue;
    m.compute += static_cast<double>(s.totals.compute_ns);
    m.idle += static_cast<double>(s.totals.idle_ns());
    m.idle_before += static_cast<double>(s.totals.idle_before_comm_ns);
    ++m.steps;
  }
  if (m.steps) {
    const double n = static_cast<double>(m.steps);
    m.compute /= n;
    m.idle /= n;
    m.idle_before /= n;
  }
  return m;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Mean transfer time per byte (kernel end − last arrival) on comms that include `rank_index`
// divided by the same on comms that do not; 0 when either side has no GPU instances.
double transfer_ratio(const model::JobTrace& job, const model::MatchResult& match,
                      const model::ClockAlignment& clocks, const Arrivals& arrivals,
                      std::size_t rank_index) {
  double in_t = 0, in_b = 0, out_t = 0, out_b = 0;
  for (std::size_t i = 0; i < match.instances.size(); ++i) {
    const InstanceArrival& ia = arrivals.instances[i];
    if (!ia.used || !ia.gpu) continue;
    const model::CollectiveInstance& inst = match.instances[i];
    bool includes = false;
    int64_t end = std::numeric_limits<int64_t>::min();
    for (std::size_t m = inst.first_member; m < inst.first_member + inst.nmembers; ++m) {
      const model::InstanceMember& mem = match.members[m];
      includes = includes || mem.rank_index == rank_index;
      const model::CallEvent& c = job.ranks[mem.rank_index].calls[mem.call_index];
      end = std::max(end, c.gpu_end_ns + clocks.at(mem.rank_index));
    }
    const double t = static_cast<double>(std::max<int64_t>(0, end - ia.last_ns));
    const double b = static_cast<double>(std::max<uint64_t>(1, inst.bytes));
    (includes ? in_t : out_t) += t;
    (includes ? in_b : out_b) += b;
  }
  if (in_b == 0 || out_b == 0 || out_t == 0) return 0;
  return (in_t / in_b) / (out_t / out_b);
}

void attribute(Straggler& s, const StepMetrics& mine, const StepMetrics& base, double late_ns,
               const char* base_name, bool periodic_context) {
  const double dc = mine.compute - base.compute;
  const double di = mine.idle - base.idle;
  if (dc >= di && dc > 0.3 * late_ns && dc > 0.02 * base.compute) {
    s.cause = "gpu-slow";
    s.evidence = fmt::format("compute {}/step vs {} {} (+{}); GPU idle {}/step vs {}",
                             human_time(mine.compute), human_time(base.compute), base_name,
                             human_time(dc), human_time(mine.idle), human_time(base.idle));
    s.because = fmt::format("its compute takes {}/step vs {} {} — {}", human_time(mine.compute),
                            human_time(base.compute), base_name,
                            periodic_context ? "extra GPU work (evaluation?)"
                                             : "slow GPU (clocks, thermals, a noisy neighbour?)");
  } else if (di > 0.3 * late_ns) {
    s.cause = "host-stall";
    s.evidence = fmt::format(
        "GPU idle {}/step vs {} {} (+{}), {} of it right before collectives; compute {}/step vs {}",
        human_time(mine.idle), human_time(base.idle), base_name, human_time(di),
        human_time(mine.idle_before), human_time(mine.compute), human_time(base.compute));
    s.because = fmt::format("its GPU idles {}/step ({} {}) — {}", human_time(mine.idle),
                            human_time(base.idle), base_name,
                            periodic_context ? "host-side stall (checkpoint or evaluation?)"
                                             : "host-side stall (data loading?)");
  }
}

}  // namespace

const char* to_string(Pattern p) {
  switch (p) {
    case Pattern::kPeriodic:
      return "periodic";
    case Pattern::kSpikes:
      return "spikes";
    case Pattern::kPersistent:
      break;
  }
  return "persistent";
}

StragglerResult StragglerResult::of(const model::JobTrace& job, const model::MatchResult& match,
                                    const model::ClockAlignment& clocks, const Arrivals& arrivals,
                                    const std::vector<RankOverlap>& overlaps) {
  StragglerResult out;
  out.stats = ArrivalStats::of(job, match, arrivals, overlaps);
  const ArrivalStats& st = out.stats;
  out.late_ns = std::max<int64_t>(
      kLateFloorNs, static_cast<int64_t>(kLateNoiseFactor * static_cast<double>(st.noise_ns)));
  out.spike_ns = std::max<int64_t>(
      kSpikeFloorNs, static_cast<int64_t>(kSpikeNoiseFactor * static_cast<double>(st.noise_ns)));
  out.instances = arrivals.gpu_instances + arrivals.host_instances;
  out.tie_ns = arrivals.tie_ns;
  out.gpu_instances = arrivals.gpu_instances;
  out.host_instances = arrivals.host_instances;
  if (arrivals.host_instances == 0) {
    out.timestamps = "GPU kernel starts";
  } else if (arrivals.gpu_instances == 0) {
    out.timestamps = "host call entries (no GPU timing recorded)";
  } else {
    out.timestamps = fmt::format("GPU kernel starts ({} instances), host call entries ({})",
                                 arrivals.gpu_instances, arrivals.host_instances);
  }
  uint64_t all_reduce = 0, total = 0;
  for (const RankArrivalStats& r : st.ranks) {
    all_reduce += r.func_counts[static_cast<int>(format::Func::kAllReduce)];
    total += r.instances;
  }
  out.what = total && all_reduce * 10 >= total * 9 ? "all-reduces" : "collectives";

  auto last_threshold = [](const RankArrivalStats& r) {
    return r.fair_last_pct + (100.0 - r.fair_last_pct) / 2;
  };
  std::vector<bool> node_late(st.ranks.size(), false);
  std::size_t active_hosts = 0, active_ranks = 0;
  for (const HostArrivalStats& h : st.hosts) active_hosts += h.instances > 0;
  for (const RankArrivalStats& r : st.ranks) active_ranks += r.instances > 0;
  for (const HostArrivalStats& h : st.hosts) {
    if (active_hosts < 2 || h.rank_indices.size() < 2 || h.instances == 0) continue;
    const double fair = 100.0 * static_cast<double>(h.rank_indices.size()) /
                        static_cast<double>(std::max<std::size_t>(1, active_ranks));
    bool all_late = true;
    double late_sum = 0;
    for (std::size_t r : h.rank_indices) {
      all_late = all_late && st.ranks[r].instances > 0 &&
                 st.ranks[r].mean_lateness_ns() >= static_cast<double>(out.late_ns);
      late_sum += st.ranks[r].mean_lateness_ns();
    }
    if (!all_late || h.last_pct() < fair + (100.0 - fair) / 2) continue;
    NodeProblem np{h.host, {}, h.last_pct(), late_sum / static_cast<double>(h.rank_indices.size())};
    for (std::size_t r : h.rank_indices) {
      np.ranks.push_back(st.ranks[r].rank);
      node_late[r] = true;
    }
    out.nodes.push_back(std::move(np));
  }

  for (const RankArrivalStats& r : st.ranks) {
    if (r.instances == 0) continue;
    Straggler s;
    s.rank_index = r.rank_index;
    s.rank = r.rank;
    s.host = r.host;
    s.arrived_last_pct = r.last_pct();
    s.mean_lateness_ns = r.mean_lateness_ns();
    s.lateness_when_last_ns = r.lateness_when_last_ns();
    s.inflicted_wait_ns = r.inflicted_wait_ns;
    s.node_problem = node_late[r.rank_index];
    const std::size_t warmup =
        r.rank_index < overlaps.size() ? overlaps[r.rank_index].plan.warmup : 0;
    std::vector<std::size_t> spikes;
    double spike_sum = 0;
    for (std::size_t k = warmup; k < r.step_lateness_ns.size(); ++k) {
      if (r.step_lateness_ns[k] >= out.spike_ns) {
        spikes.push_back(k);
        spike_sum += static_cast<double>(r.step_lateness_ns[k]);
      }
    }
    std::size_t steady_steps = 0;
    for (std::size_t k = warmup; k < r.step_lateness_ns.size(); ++k) {
      steady_steps += r.step_lateness_ns[k] != std::numeric_limits<int64_t>::min();
    }
    const bool late = s.mean_lateness_ns >= static_cast<double>(out.late_ns);
    const bool persistent = s.node_problem ||
                            (late && r.last >= 2 && s.arrived_last_pct >= last_threshold(r)) ||
                            (late && steady_steps > 0 && 2 * spikes.size() >= steady_steps);
    if (persistent) {
      s.pattern = Pattern::kPersistent;
    } else if (spikes.size() >= 2) {
      std::map<std::size_t, std::size_t> gaps;
      for (std::size_t k = 1; k < spikes.size(); ++k) ++gaps[spikes[k] - spikes[k - 1]];
      auto common = std::max_element(gaps.begin(), gaps.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      });
      const bool periodic =
          spikes.size() >= 3 && common->first >= 2 && common->second * 5 >= (spikes.size() - 1) * 4;
      s.pattern = periodic ? Pattern::kPeriodic : Pattern::kSpikes;
      s.period_steps = periodic ? common->first : 0;
      s.spike_steps = spikes;
      s.spike_lateness_ns = spike_sum / static_cast<double>(spikes.size());
    } else {
      if (spikes.size() == 1) {
        out.one_offs.push_back(
            fmt::format("rank {} step {}: +{}", r.rank, spikes[0] + 1, human_time(spike_sum)));
      }
      continue;
    }
    // Cause.
    const RankOverlap* mine = r.rank_index < overlaps.size() ? &overlaps[r.rank_index] : nullptr;
    if (!mine || !mine->measurable) {
      s.cause = "unknown";
      s.evidence = arrivals.gpu_instances == 0
                       ? fmt::format(
                             "host-only records: its calls enter {} after the median rank; "
                             "GPU timing is needed to tell gpu-slow from host-stall",
                             human_time(s.mean_lateness_ns))
                       : fmt::format(
                             "no compute kernels recorded for it (lite mode?): its "
                             "collectives start {} after the median rank",
                             human_time(s.mean_lateness_ns));
      s.because = "cause unknown (" + s.evidence + ")";
    } else if (s.pattern == Pattern::kPersistent) {
      const StepMetrics me = mean_metrics(*mine, [](std::size_t) { return true; });
      std::vector<double> pc, pi, pb;
      for (const RankOverlap& o : overlaps) {
        if (o.rank_index == r.rank_index || !o.measurable) continue;
        if (s.node_problem && node_late[o.rank_index]) continue;  // compare with healthy nodes
        const StepMetrics m = mean_metrics(o, [](std::size_t) { return true; });
        pc.push_back(m.compute);
        pi.push_back(m.idle);
        pb.push_back(m.idle_before);
      }
      const StepMetrics base{median(pc), median(pi), median(pb), 0};
      attribute(s, me, base, s.mean_lateness_ns, "on its peers", false);
    } else {
      auto in_spikes = [&](std::size_t k) {
        return std::binary_search(s.spike_steps.begin(), s.spike_steps.end(), k);
      };
      const StepMetrics at = mean_metrics(*mine, in_spikes);
      const StepMetrics rest = mean_metrics(*mine, [&](std::size_t k) { return !in_spikes(k); });
      attribute(s, at, rest, s.spike_lateness_ns, "in its other steps", true);
    }
    if (s.cause.empty()) {
      const double ratio = transfer_ratio(job, match, clocks, arrivals, r.rank_index);
      if (ratio >= 1.5) {
        s.cause = "network";
        s.evidence = fmt::format(
            "transfer time per byte on its comms is {:.1f}x that of comms "
            "without it",
            ratio);
        s.because = "its collectives transfer " + fmt::format("{:.1f}x", ratio) +
                    " slower than comms without it — network (NIC, link, switch?)";
      } else {
        s.cause = "unknown";
        s.evidence =
            "neither its compute nor its GPU idle time differs enough to explain the "
            "lateness";
        s.because = "cause unknown (compute and GPU idle look like its peers')";
      }
    }
    out.stragglers.push_back(std::move(s));
  }
  std::sort(out.stragglers.begin(), out.stragglers.end(),
            [](const Straggler& a, const Straggler& b) {
              if (a.inflicted_wait_ns != b.inflicted_wait_ns)
                return a.inflicted_wait_ns > b.inflicted_wait_ns;
              return a.mean_lateness_ns > b.mean_lateness_ns;
            });
  return out;
}

}  // namespace ncclwatch::analysis

#include "analysis/straggler_cause.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "analysis/cpu_wait.h"
#include "analysis/robust_stats.h"

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

using stats::median;

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

// gpu-slow when the extra compute explains a good part of the lateness, host-stall when the
// extra GPU idle time does; else the cause stays unknown (the caller tries the network).
void attribute(Straggler& s, const StepMetrics& mine, const StepMetrics& base, double late_ns,
               bool against_own_steps) {
  CauseEvidence& e = s.evidence;
  e.compute_ns = mine.compute;
  e.idle_ns = mine.idle;
  e.idle_before_comm_ns = mine.idle_before;
  e.base_compute_ns = base.compute;
  e.base_idle_ns = base.idle;
  e.against_own_steps = against_own_steps;
  const double dc = mine.compute - base.compute;
  const double di = mine.idle - base.idle;
  if (dc >= di && dc > 0.3 * late_ns && dc > 0.02 * base.compute) {
    s.cause = Cause::kGpuSlow;
  } else if (di > 0.3 * late_ns) {
    s.cause = Cause::kHostStall;
  }
}

// Per rank index, its NCCL-calling threads' run-queue wait per step of its plan (cpu_wait.h);
// empty for a rank without scheduling samples.
std::vector<std::vector<double>> cpu_waits(const model::JobTrace& job,
                                           const std::vector<RankOverlap>& overlaps) {
  std::vector<std::vector<double>> out(overlaps.size());
  for (std::size_t r = 0; r < overlaps.size() && r < job.ranks.size(); ++r)
    out[r] = cpu_wait_per_step(job.ranks[r], overlaps[r].plan);
  return out;
}

// The straggler's mean run-queue wait per steady step and its healthy peers' median (NaN when
// either is unknown).
std::pair<double, double> cpu_wait_against_peers(std::size_t r,
                                                 const std::vector<std::vector<double>>& waits,
                                                 const std::vector<RankOverlap>& overlaps,
                                                 const std::vector<bool>& persistent) {
  const auto all = [](std::size_t) { return true; };
  const double mine = mean_cpu_wait(waits[r], overlaps[r].plan.warmup, all);
  std::vector<double> peers;
  for (std::size_t o = 0; o < waits.size(); ++o) {
    if (o == r || waits[o].empty() || (o < persistent.size() && persistent[o])) continue;
    const double w = mean_cpu_wait(waits[o], overlaps[o].plan.warmup, all);
    if (!std::isnan(w)) peers.push_back(w);
  }
  return {mine, peers.empty() ? std::numeric_limits<double>::quiet_NaN() : median(peers)};
}

// cpu-contention when the straggler's extra run-queue wait per affected step (against its
// healthy peers', or its other steps') explains a good part of its lateness: a process that
// waits for a CPU launches its work and enters its collectives late, which the GPU figures
// see as idle time (host-stall) or host-only records cannot explain at all. Extra compute
// larger than the extra wait stays gpu-slow: waiting for a CPU does not lengthen kernels. Extra
// GPU idle time more than twice the extra wait stays host-stall: the rank sat on the host for
// something else (sleep, I/O, a lock), and on a loaded machine every rank's wait differs by
// milliseconds from its peers' without being the cause.
void attribute_cpu_wait(Straggler& s, const std::vector<std::vector<double>>& waits,
                        const std::vector<RankOverlap>& overlaps,
                        const std::vector<bool>& persistent) {
  const std::size_t r = s.rank_index;
  if (r >= waits.size() || waits[r].empty()) return;
  double mine = 0, base = 0, late = 0;
  bool own = false;
  if (s.pattern == Pattern::kPersistent) {
    std::tie(mine, base) = cpu_wait_against_peers(r, waits, overlaps, persistent);
    late = s.lateness_ns;
  } else {
    auto in_spikes = [&](std::size_t k) {
      return std::binary_search(s.spike_steps.begin(), s.spike_steps.end(), k);
    };
    const std::size_t first = overlaps[r].plan.warmup;
    mine = mean_cpu_wait(waits[r], first, in_spikes);
    base = mean_cpu_wait(waits[r], first, [&](std::size_t k) { return !in_spikes(k); });
    late = s.spike_lateness_ns;
    own = true;
    // A rank that waits for a CPU at every step, its lateness bunched into spikes by the
    // scheduler's slices, waits in its other steps as much as in its spikes: then against its
    // peers, its lateness spread over its steps, when it waits well above them in its other
    // steps too (a rank stalled on the host every Nth step does not). Only when its GPU figures
    // named no cause: they compare its spikes with its other steps, as a periodic cause is.
    const auto [all, peers] = cpu_wait_against_peers(r, waits, overlaps, persistent);
    const double spread = s.steady_steps > 0
                              ? s.spike_lateness_ns * static_cast<double>(s.spike_steps.size()) /
                                    static_cast<double>(s.steady_steps)
                              : s.spike_lateness_ns;
    const bool own_explains = !std::isnan(mine) && !std::isnan(base) && mine - base > 0.3 * late;
    if (!own_explains && s.cause == Cause::kUnknown && !std::isnan(all) && !std::isnan(peers) &&
        !std::isnan(base) && all - peers > 0.5 * spread && base - peers > 0.5 * spread) {
      mine = all;
      base = peers;
      late = spread;
      own = false;
    }
  }
  if (std::isnan(mine) || std::isnan(base)) return;
  CauseEvidence& e = s.evidence;
  e.cpu_wait_ns = mine;
  e.base_cpu_wait_ns = base;
  const double dw = mine - base;
  if (dw <= 0.3 * late) return;
  if (s.cause == Cause::kGpuSlow && e.compute_ns - e.base_compute_ns >= dw) return;
  if (s.cause == Cause::kHostStall && e.idle_ns - e.base_idle_ns > 2 * dw) return;
  e.against_own_steps = own;
  s.cause = Cause::kCpuContention;
}

}  // namespace

void attribute_causes(const model::JobTrace& job, const model::MatchResult& match,
                      const model::ClockAlignment& clocks, const Arrivals& arrivals,
                      const std::vector<RankOverlap>& overlaps, const std::vector<bool>& persistent,
                      StragglerResult& out) {
  const std::size_t n = persistent.size();
  const std::vector<std::vector<double>> waits =
      out.stragglers.empty() ? std::vector<std::vector<double>>{} : cpu_waits(job, overlaps);
  for (Straggler& s : out.stragglers) {
    const RankOverlap* mine = s.rank_index < overlaps.size() ? &overlaps[s.rank_index] : nullptr;
    s.cause = Cause::kUnknown;
    if (!mine || !mine->measurable) {
      s.evidence.host_only = arrivals.gpu_instances == 0;
      s.evidence.no_compute = !s.evidence.host_only;
      if (mine) attribute_cpu_wait(s, waits, overlaps, persistent);
      continue;
    }
    if (s.pattern == Pattern::kPersistent) {
      const StepMetrics me = mean_metrics(*mine, [](std::size_t) { return true; });
      std::vector<double> pc, pi, pb;
      for (const RankOverlap& o : overlaps) {
        if (o.rank_index == s.rank_index || !o.measurable) continue;
        if (o.rank_index < n && persistent[o.rank_index]) continue;  // compare with healthy ranks
        const StepMetrics m = mean_metrics(o, [](std::size_t) { return true; });
        pc.push_back(m.compute);
        pi.push_back(m.idle);
        pb.push_back(m.idle_before);
      }
      const StepMetrics base{median(pc), median(pi), median(pb), 0};
      attribute(s, me, base, s.lateness_ns, false);
    } else {
      auto in_spikes = [&](std::size_t k) {
        return std::binary_search(s.spike_steps.begin(), s.spike_steps.end(), k);
      };
      const StepMetrics at = mean_metrics(*mine, in_spikes);
      const StepMetrics rest = mean_metrics(*mine, [&](std::size_t k) { return !in_spikes(k); });
      attribute(s, at, rest, s.spike_lateness_ns, true);
    }
    attribute_cpu_wait(s, waits, overlaps, persistent);
    if (s.cause == Cause::kUnknown) {
      const double ratio = transfer_ratio(job, match, clocks, arrivals, s.rank_index);
      if (ratio >= 1.5) {
        s.cause = Cause::kNetwork;
        s.evidence.transfer_ratio = ratio;
      }
    }
  }
}

double attribute_to_links(const model::JobTrace& job, const std::vector<std::size_t>& active,
                          const std::vector<int64_t>& steady_inflicted, double late_ns,
                          double window_sum, StragglerResult& out) {
  if (out.links.empty()) return 0;
  const std::size_t none = out.links.size();
  auto link_of = [&](std::size_t r) {
    if (r >= job.ranks.size()) return none;
    for (std::size_t l = 0; l < out.links.size(); ++l) {
      for (const model::CommInfo& c : job.ranks[r].comms) {
        if (std::find(out.links[l].comms.begin(), out.links[l].comms.end(), c.id) !=
            out.links[l].comms.end())
          return l;
      }
    }
    return none;
  };
  // Slower compute is measured directly and no link explains it; GPU idle time is no evidence
  // against the link: a rank waiting for a slow transfer before its optimizer idles.
  std::vector<bool> keep(job.ranks.size(), false);
  std::vector<Straggler> kept;
  for (Straggler& s : out.stragglers) {
    if (s.cause == Cause::kGpuSlow || link_of(s.rank_index) == none) {
      if (s.rank_index < keep.size()) keep[s.rank_index] = true;
      kept.push_back(std::move(s));
    }
  }
  out.stragglers = std::move(kept);
  const double steady_steps = std::max<double>(1.0, static_cast<double>(out.steady_steps));
  std::vector<std::set<std::string>> late_hosts(out.links.size());
  double behind_wait = 0;
  for (std::size_t r : active) {
    const std::size_t l = keep[r] ? none : link_of(r);
    if (l == none) continue;
    SlowLink& link = out.links[l];
    link.behind.push_back(r);
    const double inflicted = static_cast<double>(steady_inflicted[r]);
    behind_wait += inflicted;
    link.cost_pct += window_sum > 0 ? 100.0 * inflicted / window_sum : 0;
    if (inflicted / steady_steps >= late_ns) {
      link.late_ranks.push_back(job.ranks[r].info.rank);
      late_hosts[l].insert(job.ranks[r].info.host);
    }
  }
  for (std::size_t l = 0; l < out.links.size(); ++l) {
    SlowLink& link = out.links[l];
    std::sort(link.late_ranks.begin(), link.late_ranks.end());
    link.late_hosts.assign(late_hosts[l].begin(), late_hosts[l].end());
    link.warning = window_sum <= 0 || link.cost_pct >= kWarnCostPct;
  }
  std::erase_if(out.nodes, [&](const NodeProblem& np) {
    return std::none_of(out.stragglers.begin(), out.stragglers.end(),
                        [&](const Straggler& s) { return s.node_problem && s.host == np.host; });
  });
  std::stable_sort(out.links.begin(), out.links.end(), [](const SlowLink& a, const SlowLink& b) {
    return a.cost_ns_per_step > b.cost_ns_per_step;
  });
  return behind_wait;
}

}  // namespace ncclwatch::analysis

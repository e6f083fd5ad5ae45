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

struct PeriodicFit {
  std::size_t period = 0;
  std::vector<std::size_t> fitted;  // the spike steps on the progression
};

// The arithmetic progression (period >= 2) that the most spike steps sit on, when it explains
// them: >= 3 on it, >= 80% of its positions between first and last hit, and >= 60% of all spike
// steps (a checkpoint every N steps among a few noise spikes).
PeriodicFit fit_period(const std::vector<std::size_t>& all_spikes) {
  // The first 1024 spike steps decide (and are listed); more is a run that is late all along.
  const std::vector<std::size_t> spikes(
      all_spikes.begin(), all_spikes.begin() + static_cast<std::ptrdiff_t>(
                                                   std::min<std::size_t>(all_spikes.size(), 1024)));
  PeriodicFit best;
  long best_score = 0;
  if (spikes.size() < 3) return best;
  // Bounded work on very noisy runs: a progression holding 60% of the spikes starts at one of
  // the first spikes, and periods beyond 512 steps are not "every N steps" anyone schedules.
  const std::size_t span = spikes.back() - spikes.front();
  const std::size_t anchors = std::min<std::size_t>(spikes.size(), 8);
  for (std::size_t period = 2; period <= std::min<std::size_t>(span / 2, 512); ++period) {
    for (std::size_t a = 0; a < anchors; ++a) {
      std::vector<std::size_t> on;
      for (std::size_t k : spikes) {
        if (k >= spikes[a] && (k - spikes[a]) % period == 0) on.push_back(k);
      }
      if (on.size() < 3) continue;
      const std::size_t positions = (on.back() - on.front()) / period + 1;
      if (5 * on.size() < 4 * positions || 5 * on.size() < 3 * spikes.size()) continue;
      // Each hit counts, each missed position twice: a noise spike between two checkpoints
      // must not turn "every 4th" into "every 2nd".
      const long score =
          static_cast<long>(on.size()) - 2 * static_cast<long>(positions - on.size());
      if (score > best_score) {
        best_score = score;
        best = {period, on};
      }
    }
  }
  return best;
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
  // Step-relative floors: lateness below 1% of a step, or a spike below 10% of one, costs too
  // little to act on, and a busy host's scheduling noise stays under them.
  std::vector<double> step_lengths;
  for (const RankOverlap& o : overlaps) {
    if (o.plan.steady_steps() > 0) {
      step_lengths.push_back(static_cast<double>(o.steady.window_ns) /
                             static_cast<double>(o.plan.steady_steps()));
    }
  }
  out.step_ns = static_cast<int64_t>(median(step_lengths));
  const double noise = static_cast<double>(st.noise_ns);
  out.late_ns =
      static_cast<int64_t>(std::max({static_cast<double>(kLateFloorNs), kLateNoiseFactor * noise,
                                     kLateStepShare * static_cast<double>(out.step_ns)}));
  out.spike_ns =
      static_cast<int64_t>(std::max({static_cast<double>(kSpikeFloorNs), kSpikeNoiseFactor * noise,
                                     kSpikeStepShare * static_cast<double>(out.step_ns)}));
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
    for (std::size_t k = warmup; k < r.step_lateness_ns.size(); ++k) {
      if (r.step_lateness_ns[k] >= out.spike_ns) {
        spikes.push_back(k);
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
    } else {
      const PeriodicFit fit = fit_period(spikes);
      if (fit.fitted.size() >= 3) {
        s.pattern = Pattern::kPeriodic;
        s.period_steps = fit.period;
        s.spike_steps = fit.fitted;
      } else if (spikes.size() >= 3) {
        s.pattern = Pattern::kSpikes;
        s.spike_steps = spikes;
      }
      for (std::size_t k : spikes) {
        if (std::find(s.spike_steps.begin(), s.spike_steps.end(), k) == s.spike_steps.end()) {
          out.one_offs.push_back(
              fmt::format("rank {} step {}: +{}", r.rank, k + 1,
                          human_time(static_cast<double>(r.step_lateness_ns[k]))));
        }
      }
      if (s.spike_steps.empty()) continue;
      double sum = 0;
      for (std::size_t k : s.spike_steps) sum += static_cast<double>(r.step_lateness_ns[k]);
      s.spike_lateness_ns = sum / static_cast<double>(s.spike_steps.size());
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

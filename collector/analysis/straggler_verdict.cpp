#include "analysis/straggler_verdict.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "analysis/periodic_fit.h"
#include "analysis/robust_stats.h"
#include "analysis/units.h"
#include "model/saturating.h"

namespace ncclwatch::analysis {

using model::sat_add;
using model::sat_sub;
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

namespace {

constexpr int64_t kNoStep = std::numeric_limits<int64_t>::min();

// One rank's samples: per step (index = its step index; absent steps not present) or, without
// usable steps, per instance it took part in.
struct Samples {
  std::vector<double> d;  // lateness minus the reference of its step (or instance)
  std::vector<bool> present;
  std::size_t first = 0;  // first steady index
  std::vector<double> values() const {
    std::vector<double> v;
    for (std::size_t k = first; k < d.size(); ++k) {
      if (present[k]) v.push_back(d[k]);
    }
    return v;
  }
};

// The most frequent value of `ordinal` over `steps` (ties: the smaller), with its func.
void late_at(const RankArrivalStats& r, const std::vector<std::size_t>& steps, Straggler& s) {
  std::map<uint16_t, std::size_t> counts;
  for (std::size_t k : steps) {
    if (k < r.step_late_ordinal.size() && r.step_late_ordinal[k] > 0)
      ++counts[r.step_late_ordinal[k]];
  }
  std::size_t best = 0;
  for (const auto& [ord, c] : counts) {
    if (c > best) {
      best = c;
      s.late_at_ordinal = ord;
    }
  }
  for (std::size_t k : steps) {
    if (k < r.step_late_ordinal.size() && r.step_late_ordinal[k] == s.late_at_ordinal) {
      s.late_at_func = r.step_late_func[k];
      break;
    }
  }
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const auto at = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at), v.end());
  return v[at];
}

}  // namespace

StragglerResult StragglerResult::of(const model::JobTrace& job, const model::MatchResult& match,
                                    const model::ClockAlignment& clocks, const Arrivals& arrivals,
                                    const std::vector<RankOverlap>& overlaps) {
  StragglerResult out;
  out.stats = ArrivalStats::of(job, match, arrivals, overlaps);
  const ArrivalStats& st = out.stats;
  std::vector<double> step_lengths;
  for (const RankOverlap& o : overlaps) {
    if (o.plan.steady_steps() > 0) {
      step_lengths.push_back(static_cast<double>(o.steady.window_ns) /
                             static_cast<double>(o.plan.steady_steps()));
    }
  }
  out.step_ns = static_cast<int64_t>(median(step_lengths));
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

  const std::size_t n = st.ranks.size();
  std::vector<std::size_t> active;
  for (std::size_t r = 0; r < n; ++r) {
    if (st.ranks[r].instances) active.push_back(r);
  }
  out.ranks = active.size();
  if (active.size() < 2) return out;
  auto warmup_of = [&](std::size_t r) { return r < overlaps.size() ? overlaps[r].plan.warmup : 0; };
  double window_sum = 0;
  for (std::size_t r : active) {
    if (r < overlaps.size()) window_sum += static_cast<double>(overlaps[r].steady.window_ns);
  }

  // Samples: per steady step when the ranks have steps, else per instance.
  std::vector<double> steady_counts;
  std::size_t max_steps = 0;
  for (std::size_t r : active) {
    std::size_t c = 0;
    const auto& x = st.ranks[r].step_lateness_ns;
    for (std::size_t k = warmup_of(r); k < x.size(); ++k) c += x[k] != kNoStep;
    steady_counts.push_back(static_cast<double>(c));
    max_steps = std::max(max_steps, x.size());
  }
  out.steady_steps = static_cast<std::size_t>(median(steady_counts));
  out.per_step = out.steady_steps >= 3;
  std::vector<Samples> smp(n);
  if (out.per_step) {
    std::vector<double> col;
    for (std::size_t k = 0; k < max_steps; ++k) {
      col.clear();
      for (std::size_t r : active) {
        const auto& x = st.ranks[r].step_lateness_ns;
        if (k >= warmup_of(r) && k < x.size() && x[k] != kNoStep)
          col.push_back(static_cast<double>(x[k]));
      }
      if (col.size() < 2) continue;
      const double ref = median(col);
      for (std::size_t r : active) {
        const auto& x = st.ranks[r].step_lateness_ns;
        Samples& s = smp[r];
        if (s.d.empty()) {
          s.d.assign(x.size(), 0.0);
          s.present.assign(x.size(), false);
          s.first = warmup_of(r);
        }
        if (k >= warmup_of(r) && k < x.size() && x[k] != kNoStep) {
          s.d[k] = static_cast<double>(x[k]) - ref;
          s.present[k] = true;
        }
      }
    }
  } else {
    for (std::size_t i = 0; i < match.instances.size(); ++i) {
      const InstanceArrival& ia = arrivals.instances[i];
      if (!ia.used) continue;
      const model::CollectiveInstance& inst = match.instances[i];
      for (std::size_t m = inst.first_member; m < inst.first_member + inst.nmembers; ++m) {
        Samples& s = smp[match.members[m].rank_index];
        s.d.push_back(static_cast<double>(sat_sub(arrivals.member_ns[m], ia.median_ns)));
        s.present.push_back(true);
      }
    }
  }

  // Noise and thresholds.
  std::vector<double> sigmas, counts;
  for (std::size_t r : active) {
    const std::vector<double> v = smp[r].values();
    if (v.size() >= 2) sigmas.push_back(stats::mad_sigma(v));
    counts.push_back(static_cast<double>(v.size()));
  }
  const double sigma = median(sigmas);
  out.stats.noise_ns = static_cast<int64_t>(sigma);
  const double nact = static_cast<double>(active.size());
  const double z = stats::normal_upper_quantile(out.alpha / nact);
  const double k_med = std::max(1.0, median(counts));
  const double step = static_cast<double>(out.step_ns);
  out.late_ns =
      static_cast<int64_t>(std::max({static_cast<double>(kLateFloorNs), kLateStepShare * step,
                                     z * 1.2533 * sigma / std::sqrt(k_med)}));
  out.spike_ns = static_cast<int64_t>(std::max(
      {static_cast<double>(kSpikeFloorNs), kSpikeStepShare * step, kSpikeNoiseFactor * sigma}));
  const double late = static_cast<double>(out.late_ns), spike_t = static_cast<double>(out.spike_ns);
  const double tie = static_cast<double>(std::max<int64_t>(1, arrivals.tie_ns));

  // Spike steps per rank, and everybody's spike rate (the background for periodic and spikes).
  std::vector<std::vector<bool>> spike(n);
  std::vector<std::size_t> nspikes(n, 0), nsteps(n, 0);
  std::size_t all_spikes = 0, all_steps = 0;
  for (std::size_t r : active) {
    const Samples& s = smp[r];
    spike[r].assign(s.d.size(), false);
    for (std::size_t k = s.first; k < s.d.size(); ++k) {
      if (!s.present[k]) continue;
      ++nsteps[r];
      if (out.per_step && s.d[k] >= spike_t) {
        spike[r][k] = true;
        ++nspikes[r];
      }
    }
    all_spikes += nspikes[r];
    all_steps += nsteps[r];
  }

  // The null distribution of a rank's median residual, measured across ranks: with 16+ ranks the
  // spread of their medians (MAD) is a better standard error than the Gaussian formula when
  // the noise is skewed (contention, GC) — it is the very quantity the z test compares.
  double median_e = 0, spread_e = 0;
  if (active.size() >= 16) {
    std::vector<double> es;
    for (std::size_t r : active) {
      const std::vector<double> v = smp[r].values();
      if (v.size() >= 3) es.push_back(median(v));
    }
    median_e = median(es);
    spread_e = stats::mad_sigma(es);
  }
  std::vector<bool> persistent(n, false);
  std::vector<int64_t> steady_inflicted(n, 0);
  for (std::size_t r : active) {
    const RankArrivalStats& ra = st.ranks[r];
    const Samples& sm = smp[r];
    const std::vector<double> v = sm.values();
    if (v.size() < 3) continue;
    const double kr = static_cast<double>(v.size());
    const double e = median(v);
    std::size_t npos = 0, nneg = 0;
    for (double x : v) {
      npos += x > tie;
      nneg += x < -tie;
    }
    const double p_sign = stats::binomial_tail(npos + nneg, npos, 0.5) * nact;
    const double se = std::max(1.2533 * sigma / std::sqrt(kr), spread_e);
    // The z test is for many ranks and few steps (the sign test cannot reach 1%/4096 in 11
    // steps); skewed noise fattens the tail of a median, so it also asks for late in >= 90% of
    // the steps, which chance gives a rank with probability < 0.003 in 20 steps, and 8+ steps.
    // Below 8 steps neither test can tell a straggler from chance: nobody is named.
    const bool z_ok = v.size() >= 8 && 10 * npos >= 9 * v.size() &&
                      (se > 0 ? e - median_e >= z * se : e - median_e > tie);
    const bool shifted = (p_sign <= out.alpha || z_ok) && e >= late;

    const std::size_t others_steps = all_steps - nsteps[r];
    const double background = others_steps ? static_cast<double>(all_spikes - nspikes[r]) /
                                                 static_cast<double>(others_steps)
                                           : 0.0;
    PeriodicFit fit;
    double off_phase = 0;
    if (out.per_step) {
      fit = PeriodicFit::of(spike[r], sm.present, sm.first, background, nact, out.alpha);
      if (fit.period) {
        std::vector<double> off;
        const std::size_t phase = fit.fitted.front() % fit.period;
        for (std::size_t k = sm.first; k < sm.d.size(); ++k) {
          if (sm.present[k] && k % fit.period != phase) off.push_back(sm.d[k]);
        }
        off_phase = median(off);
      }
    }
    Straggler s;
    s.rank_index = r;
    s.rank = ra.rank;
    s.host = ra.host;
    s.arrived_last_pct = ra.last_pct();
    s.mean_lateness_ns = ra.mean_lateness_ns();
    s.lateness_when_last_ns = ra.lateness_when_last_ns();
    s.inflicted_wait_ns = ra.inflicted_wait_ns;
    s.steady_steps = nsteps[r];
    std::vector<std::size_t> all_spike_steps;
    for (std::size_t k = sm.first; k < spike[r].size(); ++k) {
      if (spike[r][k]) all_spike_steps.push_back(k);
    }
    if (fit.period && off_phase < late) {
      s.pattern = Pattern::kPeriodic;
      s.period_steps = fit.period;
      s.spike_steps = fit.fitted;
      s.p_value = fit.p_value * nact;
    } else if (shifted) {
      s.pattern = Pattern::kPersistent;
      s.p_value = std::min(1.0, p_sign);
    } else if (nspikes[r] >= 3) {
      const double q = std::max(background, 0.5 / kr);
      const double p = stats::binomial_tail(nsteps[r], nspikes[r], q) * nact;
      if (p > out.alpha) {
        s.spike_steps.clear();
      } else {
        s.pattern = Pattern::kSpikes;
        s.spike_steps = all_spike_steps;
        s.p_value = p;
      }
    }
    const bool named = s.pattern == Pattern::kPersistent ? shifted : !s.spike_steps.empty();
    for (std::size_t k : all_spike_steps) {
      if (named && std::binary_search(s.spike_steps.begin(), s.spike_steps.end(), k)) continue;
      if (named && s.pattern == Pattern::kPersistent) continue;
      if (out.one_offs.size() < 16) {
        out.one_offs.push_back(
            fmt::format("rank {} step {}: +{}", ra.rank, k + 1,
                        human_time(static_cast<double>(ra.step_lateness_ns[k]))));
      }
      ++out.one_offs_total;
    }
    if (!named) continue;
    persistent[r] = s.pattern == Pattern::kPersistent;

    // Where and how late; what it costs.
    std::vector<std::size_t> affected;
    if (s.pattern == Pattern::kPersistent) {
      std::vector<double> xs;
      for (std::size_t k = sm.first; k < sm.d.size(); ++k) {
        if (!sm.present[k]) continue;
        if (out.per_step) xs.push_back(static_cast<double>(ra.step_lateness_ns[k]));
        if (sm.d[k] >= late / 2) affected.push_back(k);
      }
      s.lateness_ns = out.per_step ? median(xs) : e;
      s.late_steps = affected.size();
    } else {
      double sum = 0;
      for (std::size_t k : s.spike_steps) sum += static_cast<double>(ra.step_lateness_ns[k]);
      s.spike_lateness_ns = sum / static_cast<double>(s.spike_steps.size());
      s.lateness_ns = s.spike_lateness_ns;
      s.late_steps = s.spike_steps.size();
      affected = s.spike_steps;
    }
    if (out.per_step) late_at(ra, affected, s);
    if (out.per_step) {
      for (std::size_t k = sm.first; k < ra.step_inflicted_ns.size(); ++k)
        steady_inflicted[r] = sat_add(steady_inflicted[r], ra.step_inflicted_ns[k]);
    } else {
      steady_inflicted[r] = ra.inflicted_wait_ns;
    }
    const double inflicted = static_cast<double>(steady_inflicted[r]);
    s.cost_ns_per_step =
        s.steady_steps && out.per_step ? inflicted / static_cast<double>(s.steady_steps) : 0;
    s.cost_pct = window_sum > 0 ? 100.0 * inflicted / window_sum : 0;
    s.warning = window_sum <= 0 || s.cost_pct >= kWarnCostPct;
    out.stragglers.push_back(std::move(s));
  }

  // Node problems: every rank of a host (2+ ranks, 2+ hosts) persistently late.
  std::size_t active_hosts = 0;
  for (const HostArrivalStats& h : st.hosts) {
    bool any = false;
    for (std::size_t r : h.rank_indices) any = any || st.ranks[r].instances > 0;
    active_hosts += any;
  }
  std::vector<bool> node_late(n, false);
  for (const HostArrivalStats& h : st.hosts) {
    if (active_hosts < 2 || h.rank_indices.size() < 2) continue;
    bool all = true;
    for (std::size_t r : h.rank_indices) all = all && persistent[r];
    if (!all) continue;
    NodeProblem np{h.host, {}, h.last_pct(), 0};
    for (std::size_t r : h.rank_indices) {
      np.ranks.push_back(st.ranks[r].rank);
      node_late[r] = true;
    }
    out.nodes.push_back(std::move(np));
  }
  for (Straggler& s : out.stragglers) s.node_problem = node_late[s.rank_index];

  // Causes.
  for (Straggler& s : out.stragglers) {
    const RankOverlap* mine = s.rank_index < overlaps.size() ? &overlaps[s.rank_index] : nullptr;
    if (!mine || !mine->measurable) {
      s.cause = "unknown";
      s.evidence = arrivals.gpu_instances == 0
                       ? fmt::format(
                             "host-only records: its calls enter {} after the median rank's; "
                             "GPU timing is needed to tell gpu-slow from host-stall",
                             human_time(std::max(0.0, s.lateness_ns)))
                       : fmt::format(
                             "no compute kernels recorded for it (lite mode?): its "
                             "collectives start {} after the median rank's",
                             human_time(std::max(0.0, s.lateness_ns)));
      s.because = "cause unknown (" + s.evidence + ")";
    } else if (s.pattern == Pattern::kPersistent) {
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
      attribute(s, me, base, s.lateness_ns, "on its peers", false);
    } else {
      auto in_spikes = [&](std::size_t k) {
        return std::binary_search(s.spike_steps.begin(), s.spike_steps.end(), k);
      };
      const StepMetrics at = mean_metrics(*mine, in_spikes);
      const StepMetrics rest = mean_metrics(*mine, [&](std::size_t k) { return !in_spikes(k); });
      attribute(s, at, rest, s.spike_lateness_ns, "in its other steps", true);
    }
    if (s.cause.empty()) {
      const double ratio = transfer_ratio(job, match, clocks, arrivals, s.rank_index);
      if (ratio >= 1.5) {
        s.cause = "network";
        s.evidence = fmt::format(
            "transfer time per byte on its comms is {:.1f}x that of comms without it", ratio);
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
  }
  std::sort(out.stragglers.begin(), out.stragglers.end(),
            [](const Straggler& a, const Straggler& b) {
              if (a.cost_ns_per_step != b.cost_ns_per_step)
                return a.cost_ns_per_step > b.cost_ns_per_step;
              if (a.inflicted_wait_ns != b.inflicted_wait_ns)
                return a.inflicted_wait_ns > b.inflicted_wait_ns;
              return a.lateness_ns > b.lateness_ns;
            });
  for (NodeProblem& np : out.nodes) {
    std::size_t k = 0;
    for (const Straggler& s : out.stragglers) {
      if (s.host != np.host || !s.node_problem) continue;
      np.mean_lateness_ns += s.mean_lateness_ns;
      np.lateness_ns += s.lateness_ns;
      np.cost_ns_per_step += s.cost_ns_per_step;
      np.cost_pct += s.cost_pct;
      ++k;
    }
    if (k) {
      np.mean_lateness_ns /= static_cast<double>(k);
      np.lateness_ns /= static_cast<double>(k);
    }
    np.warning = window_sum <= 0 || np.cost_pct >= kWarnCostPct;
  }
  std::sort(out.nodes.begin(), out.nodes.end(), [](const NodeProblem& a, const NodeProblem& b) {
    return a.cost_ns_per_step > b.cost_ns_per_step;
  });

  // Delays alike on every rank: the waiting no straggler explains.
  double explained = 0;
  for (const Straggler& s : out.stragglers)
    explained += static_cast<double>(steady_inflicted[s.rank_index]);
  const double noise_wait = std::max(0.0, static_cast<double>(st.steady_wait_ns) - explained);
  std::vector<double> xs;
  for (std::size_t r : active) {
    const bool named = std::any_of(out.stragglers.begin(), out.stragglers.end(),
                                   [&](const Straggler& s) { return s.rank_index == r; });
    if (named) continue;
    if (out.per_step) {
      const auto& x = st.ranks[r].step_lateness_ns;
      for (std::size_t k = warmup_of(r); k < x.size(); ++k) {
        if (x[k] != kNoStep) xs.push_back(static_cast<double>(x[k]));
      }
    } else {
      for (double d : smp[r].d) xs.push_back(d);
    }
  }
  out.delays.up_to_ns = std::max(0.0, percentile(std::move(xs), 0.99));
  out.delays.cost_ns_per_step =
      out.per_step && out.steady_steps ? noise_wait / static_cast<double>(out.steady_steps) : 0;
  out.delays.cost_pct = window_sum > 0 ? 100.0 * noise_wait / window_sum : 0;
  out.delays.reported = out.delays.cost_pct >= kWarnCostPct;
  return out;
}

}  // namespace ncclwatch::analysis

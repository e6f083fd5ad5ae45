#include "analysis/utilization_pattern.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "analysis/rank_digest.h"
#include "model/median.h"

namespace ncclwatch::analysis {
namespace {

double share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// A steady step whose compute was recorded (sampled compute kernels: inside a window).
bool measured(const StepBreakdown& s) {
  return !s.warmup && s.sampled;
}

// Ranks judged on their GPU timeline: kernels recorded and steps found.
std::vector<const RankBreakdown*> gpu_timed(const std::vector<RankBreakdown>& ranks) {
  std::vector<const RankBreakdown*> out;
  for (const RankBreakdown& r : ranks) {
    if (r.basis == BreakdownBasis::kGpu && r.steady_steps > 0) out.push_back(&r);
  }
  return out;
}

// Share of ranks that drop at the step boundary in most of their steady steps.
double sawtooth_share(const std::vector<const RankBreakdown*>& ranks) {
  std::size_t yes = 0;
  for (const RankBreakdown* r : ranks) {
    std::size_t drops = 0;
    for (const StepBreakdown& s : r->steps) {
      if (!measured(s)) continue;
      drops += share(s.times.idle_step_boundary_ns, s.times.step_ns) >= kDropShare;
    }
    yes += static_cast<double>(drops) >= kMostSteps * static_cast<double>(r->steady_steps);
  }
  return ranks.empty() ? 0.0 : static_cast<double>(yes) / static_cast<double>(ranks.size());
}

// Steps (0-based) where 75 %+ of ranks idle at the boundary 10 % of a step above their own
// median boundary idle.
std::vector<std::size_t> save_spikes(const std::vector<const RankBreakdown*>& ranks,
                                     int64_t step_ns) {
  // Per step index (vectors, not maps: a lookup per rank x step was most of judge()).
  std::size_t nsteps = 0;
  for (const RankBreakdown* r : ranks) {
    for (const StepBreakdown& s : r->steps) nsteps = std::max(nsteps, std::size_t{s.index} + 1);
  }
  std::vector<std::size_t> count(nsteps, 0);  // step -> ranks spiking there
  std::vector<std::size_t> seen(nsteps, 0);   // step -> ranks with it as a steady step
  const int64_t threshold = static_cast<int64_t>(kDropShare * static_cast<double>(step_ns));
  std::vector<int64_t> idle;
  for (const RankBreakdown* r : ranks) {
    idle.clear();
    for (const StepBreakdown& s : r->steps) {
      if (measured(s)) idle.push_back(s.times.idle_step_boundary_ns);
    }
    const int64_t usual = model::median_in_place(std::span<int64_t>(idle));
    for (const StepBreakdown& s : r->steps) {
      if (!measured(s)) continue;
      ++seen[s.index];
      count[s.index] += s.times.idle_step_boundary_ns - usual >= threshold;
    }
  }
  std::vector<std::size_t> out;
  for (std::size_t step = 0; step < nsteps; ++step) {
    const std::size_t n = count[step];
    if (seen[step] && static_cast<double>(n) >= kMostRanks * static_cast<double>(seen[step]) &&
        n > 0) {
      out.push_back(step);
    }
  }
  return out;
}

// The longest arithmetic progression (spacing > 1) among the spike steps: at least
// kMinSaveSpikes hits, every one of its positions up to its last hit a spike (saves do not skip
// an interval), and holding 60 %+
// of all spikes (a machine-wide hiccup adds an odd spike now and then; it is left out). Returns
// the spacing (0: none) and the steps on it.
std::size_t periodic_subset(const std::vector<std::size_t>& spikes,
                            std::vector<std::size_t>& on_it) {
  constexpr std::size_t kMaxExamined = 200;
  const std::size_t n = std::min(spikes.size(), kMaxExamined);
  std::size_t best_d = 0;
  on_it.clear();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const std::size_t d = spikes[j] - spikes[i];
      if (d < 2) continue;
      std::vector<std::size_t> hits;
      for (std::size_t k = i; k < n; ++k) {
        if ((spikes[k] - spikes[i]) % d == 0) hits.push_back(spikes[k]);
      }
      const std::size_t expected = (hits.back() - hits.front()) / d + 1;
      if (hits.size() < kMinSaveSpikes || hits.size() < expected ||
          5 * hits.size() < 3 * spikes.size()) {
        continue;
      }
      if (hits.size() > on_it.size() || (hits.size() == on_it.size() && d < best_d)) {
        on_it = hits;
        best_d = d;
      }
    }
  }
  return best_d;
}

double median_kernel_us(const model::JobTrace& job, const std::vector<const RankBreakdown*>& rs) {
  std::vector<int64_t> d;
  for (const RankBreakdown* r : rs) {
    const model::RankTrace& rank = job.ranks[r->rank_index];
    const std::vector<int64_t> own =
        rank.digest ? std::vector<int64_t>() : kernel_duration_sample(rank);
    const std::vector<int64_t>& sample = rank.digest ? rank.digest->kernel_sample : own;
    d.insert(d.end(), sample.begin(), sample.end());
  }
  return static_cast<double>(model::median(d)) / 1000.0;
}

// Mean over ranks of the standard deviation of per-step nvidia-smi utilization, points.
double step_spread(const std::vector<const RankBreakdown*>& ranks) {
  double sum = 0;
  for (const RankBreakdown* r : ranks) {
    double m = 0, m2 = 0;
    std::size_t n = 0;
    for (const StepBreakdown& s : r->steps) {
      if (!measured(s)) continue;
      const double u = 100.0 * share(s.times.smi_busy_ns(), s.times.step_ns);
      ++n;
      const double delta = u - m;
      m += delta / static_cast<double>(n);
      m2 += delta * (u - m);
    }
    sum += n > 1 ? std::sqrt(m2 / static_cast<double>(n - 1)) : 0.0;
  }
  return ranks.empty() ? 0.0 : sum / static_cast<double>(ranks.size());
}

std::size_t host_count(const model::JobTrace& job) {
  std::vector<std::string> hosts;
  for (const model::RankTrace& r : job.ranks) hosts.push_back(r.info.host);
  std::sort(hosts.begin(), hosts.end());
  return static_cast<std::size_t>(std::unique(hosts.begin(), hosts.end()) - hosts.begin());
}

}  // namespace

const char* to_string(PatternRow row) {
  switch (row) {
    case PatternRow::kHealthy:
      return "healthy";
    case PatternRow::kNone:
      return "none";
    case PatternRow::kLagging:
      return "lagging";
    case PatternRow::kCheckpoint:
      return "checkpoint";
    case PatternRow::kDataloader:
      return "dataloader";
    case PatternRow::kCollectiveDrops:
      return "collective-drops";
    case PatternRow::kFlatLow:
      return "flat-low";
    case PatternRow::kNotJudged:
      break;
  }
  return "not-judged";
}

namespace {

// The lagging row's cost: its node problem's, else its front straggler's (the figures the
// straggler findings carry).
double lagging_cost_pct(const StragglerResult& s) {
  if (!s.nodes.empty()) return s.nodes.front().cost_pct;
  return s.stragglers.empty() ? 0.0 : s.stragglers.front().cost_pct;
}

// What each row takes of the job's rank-time: the part of the step its shape names.
double row_cost_pct(const PatternVerdict& v, double straggler_cost) {
  switch (v.row) {
    case PatternRow::kLagging:
      return straggler_cost;
    case PatternRow::kCheckpoint:
    case PatternRow::kDataloader:
      return v.stall_cost_pct;
    case PatternRow::kCollectiveDrops:
      return v.comm_drop_pct;
    case PatternRow::kFlatLow:
      return v.idle_other_pct;
    case PatternRow::kNone:
      return 100.0 - v.useful_pct;
    case PatternRow::kHealthy:
    case PatternRow::kNotJudged:
      break;
  }
  return 0;
}

// The job means over the GPU-timed ranks' steady steps, as shares of the step.
struct JobTimes {
  StepTimes total;
  std::size_t rank_steps = 0;
  int64_t step_ns = 0;  // mean step
};

JobTimes job_times(const std::vector<const RankBreakdown*>& gpu) {
  JobTimes t;
  for (const RankBreakdown* r : gpu) {
    t.total += r->steady;
    t.rank_steps += r->steady_steps;
  }
  t.step_ns = t.rank_steps ? t.total.step_ns / static_cast<int64_t>(t.rank_steps) : 0;
  return t;
}

void fill_shares(const StepTimes& total, PatternVerdict& v) {
  v.smi_pct = 100.0 * share(total.smi_busy_ns(), total.step_ns);
  v.useful_pct = 100.0 * share(total.compute_ns, total.step_ns);
  v.boundary_idle_pct = 100.0 * share(total.idle_step_boundary_ns, total.step_ns);
  v.comm_drop_pct = 100.0 * share(total.exposed_ns() + total.idle_before_comm_ns, total.step_ns);
  v.exposed_pct = 100.0 * share(total.exposed_ns(), total.step_ns);
  v.exposed_wait_pct = 100.0 * share(total.exposed_wait_ns, total.step_ns);
  v.exposed_transfer_pct = 100.0 * share(total.exposed_transfer_ns, total.step_ns);
  v.memcpy_pct = 100.0 * share(total.memcpy_ns, total.step_ns);
  v.idle_pct = 100.0 * share(total.idle_ns(), total.step_ns);
  v.idle_before_comm_pct = 100.0 * share(total.idle_before_comm_ns, total.step_ns);
  v.idle_other_pct = 100.0 * share(total.idle_other_ns, total.step_ns);
}

// A job-wide stall: every rank idles at the step boundary at a save interval (checkpoint) or in
// most steps (dataloader).
struct JobStall {
  std::vector<std::size_t> spikes;  // checkpoint: the spike steps on the spacing (0-based)
  std::size_t spacing = 0;
  double sawtooth_share = 0;
  bool checkpoint = false;
  int64_t stall_ns = 0;  // the stall per affected step
  double cost_pct = 0;   // what it takes of the job's rank-time (the cost unit)
};

// Mean boundary idle over the steady steps that are (or are not) in `spikes`, and their count.
std::pair<int64_t, std::size_t> boundary_idle(const std::vector<const RankBreakdown*>& gpu,
                                              const std::vector<std::size_t>& spikes,
                                              bool in_spikes) {
  int64_t idle = 0;
  std::size_t n = 0;
  for (const RankBreakdown* r : gpu) {
    for (const StepBreakdown& s : r->steps) {
      if (measured(s) && std::binary_search(spikes.begin(), spikes.end(), s.index) == in_spikes) {
        idle += s.times.idle_step_boundary_ns;
        ++n;
      }
    }
  }
  return {idle, n};
}

// The first steady step (0-based index; SIZE_MAX when none): it carries what warm-up left
// (allocator growth, autotuning, lazy initialisation) and is never taken for a save. On a real
// H200 it idled 1.6 ms at its boundary against 0.6 ms usual and, with two jitter spikes at the
// same spacing, made 70 launch-bound steps look like checkpoints every 31 steps.
std::size_t first_steady_step(const std::vector<const RankBreakdown*>& gpu) {
  std::size_t first = SIZE_MAX;
  for (const RankBreakdown* r : gpu) {
    for (const StepBreakdown& s : r->steps) {
      if (measured(s)) {
        first = std::min(first, std::size_t{s.index});
        break;
      }
    }
  }
  return first;
}

// With only kMinSaveSpikes sightings, whether the stalls agree in size (the largest excess over
// the usual boundary idle at most twice the smallest): a save writes the same state each time,
// jitter comes in any size. More sightings are evidence enough on their own.
bool sizes_agree(const std::vector<const RankBreakdown*>& gpu,
                 const std::vector<std::size_t>& spikes, double usual) {
  if (spikes.size() > kMinSaveSpikes) return true;
  double lo = 0, hi = 0;
  for (std::size_t i = 0; i < spikes.size(); ++i) {
    const auto [idle, n] = boundary_idle(gpu, {spikes[i]}, true);
    const double excess = n ? static_cast<double>(idle) / static_cast<double>(n) - usual : 0.0;
    lo = i == 0 ? excess : std::min(lo, excess);
    hi = i == 0 ? excess : std::max(hi, excess);
  }
  return lo > 0 && hi <= 2.0 * lo;
}

JobStall find_stall(const std::vector<const RankBreakdown*>& gpu, const JobTimes& t) {
  JobStall st;
  if (gpu.empty()) return st;
  std::vector<std::size_t> all_spikes = save_spikes(gpu, t.step_ns);
  std::erase(all_spikes, first_steady_step(gpu));
  st.spacing = periodic_subset(all_spikes, st.spikes);
  const std::size_t steady = t.rank_steps / gpu.size();
  st.sawtooth_share = sawtooth_share(gpu);
  st.checkpoint = st.spacing > 1 && 2 * all_spikes.size() <= steady;
  if (st.checkpoint) {
    const auto [idle, n] = boundary_idle(gpu, st.spikes, true);
    st.stall_ns = n ? idle / static_cast<int64_t>(n) : 0;
    // Its cost: the spike steps' boundary idle beyond the other steps'.
    const auto [other, no] = boundary_idle(gpu, st.spikes, false);
    const double usual = no ? static_cast<double>(other) / static_cast<double>(no) : 0.0;
    const double excess = std::max(0.0, static_cast<double>(idle) - usual * static_cast<double>(n));
    st.cost_pct = t.total.step_ns > 0 ? 100.0 * excess / static_cast<double>(t.total.step_ns) : 0;
    if (!sizes_agree(gpu, st.spikes, usual)) {
      const double sawtooth = st.sawtooth_share;
      st = JobStall{};
      st.sawtooth_share = sawtooth;
    }
  }
  if (!st.checkpoint && st.sawtooth_share >= kMostRanks) {
    st.stall_ns = t.total.idle_step_boundary_ns /
                  static_cast<int64_t>(std::max<std::size_t>(1, t.rank_steps));
    st.cost_pct = 100.0 * share(t.total.idle_step_boundary_ns, t.total.step_ns);
  }
  return st;
}

// The checkpoint row's evidence: the spike steps, their spacing, boundary idle on and off them.
void fill_checkpoint(const std::vector<const RankBreakdown*>& gpu, const JobStall& st,
                     PatternVerdict& v) {
  v.period_steps = st.spacing;
  const auto [spike_idle, ns] = boundary_idle(gpu, st.spikes, true);
  const auto [other_idle, no] = boundary_idle(gpu, st.spikes, false);
  for (std::size_t s : st.spikes) v.spike_steps.push_back(s + 1);
  v.spike_idle_ns =
      static_cast<double>(spike_idle) / static_cast<double>(std::max<std::size_t>(1, ns));
  v.other_idle_ns =
      static_cast<double>(other_idle) / static_cast<double>(std::max<std::size_t>(1, no));
}

// Rows 4 and 5 and the fallbacks, once no stall or straggler explains the job.
PatternRow steady_shape(const model::JobTrace& job, const std::vector<const RankBreakdown*>& gpu,
                        const StepTimes& total, PatternVerdict& v) {
  // 4. Useful work drops with every collective.
  if (v.comm_drop_pct >= 100 * kCollectiveShare) return PatternRow::kCollectiveDrops;
  // 5. Flat and low: idle spread between kernels, every step alike.
  v.step_spread_pct = step_spread(gpu);
  v.kernel_median_us = median_kernel_us(job, gpu);
  if (v.smi_pct < kWellTunedPct && total.idle_other_ns * 2 >= total.idle_ns() &&
      share(total.idle_other_ns, total.step_ns) >= kDropShare &&
      v.step_spread_pct <= kFlatSpreadPct) {
    return PatternRow::kFlatLow;
  }
  return v.useful_pct < kWellTunedPct ? PatternRow::kNone : PatternRow::kHealthy;
}

}  // namespace

PatternVerdict PatternVerdict::judge(const model::JobTrace& job,
                                     const std::vector<RankBreakdown>& ranks,
                                     const StragglerResult& stragglers) {
  PatternVerdict v;
  const std::vector<const RankBreakdown*> gpu = gpu_timed(ranks);
  v.gpu_ranks = gpu.size();
  const JobTimes t = job_times(gpu);
  v.rank_steps = t.rank_steps;
  fill_shares(t.total, v);
  v.multi_node = host_count(job) >= 2;
  v.kernels_per_step = static_cast<double>(t.total.kernels) /
                       static_cast<double>(std::max<std::size_t>(1, t.rank_steps));

  // The job-wide stalls (every rank idles at the step boundary, every step or at a save
  // interval) are judged first: when they hold, a straggler whose lateness is small next to the
  // stall is the stall's uneven tail (one rank's data arriving a bit later), not a bad GPU or
  // node, and is named as a side note.
  const JobStall st = find_stall(gpu, t);
  v.stall_ns = st.stall_ns;
  v.stall_cost_pct = st.cost_pct;
  v.sawtooth_rank_share = st.sawtooth_share;
  // Which is bigger is decided in the one cost unit, as the findings are ordered by it.
  const double straggler_cost = lagging_cost_pct(stragglers);
  v.straggler_is_side_note =
      !stragglers.stragglers.empty() && st.stall_ns > 0 && straggler_cost < st.cost_pct;

  // 1. One GPU or node lagging the rest (the straggler analysis decides who).
  if (!stragglers.stragglers.empty() && !v.straggler_is_side_note) {
    v.row = PatternRow::kLagging;
  } else if (gpu.empty()) {
    v.row = PatternRow::kNotJudged;
  } else if (st.checkpoint) {
    // 2. Sawtooth aligned with save intervals: a few steps, evenly spaced, stall on every rank.
    v.row = PatternRow::kCheckpoint;
    fill_checkpoint(gpu, st, v);
  } else if (st.sawtooth_share >= kMostRanks) {
    // 3. Sawtooth every step: the host feeds the GPU too slowly.
    v.row = PatternRow::kDataloader;
  } else {
    v.row = steady_shape(job, gpu, t.total, v);
  }
  v.severity = v.row == PatternRow::kNotJudged || v.row == PatternRow::kHealthy
                   ? model::Severity::kInfo
                   : model::Severity::kWarning;
  // Lagging is as severe as the straggler finding it repeats (< 1% of step time: info).
  if (v.row == PatternRow::kLagging && straggler_cost < kWarnCostPct)
    v.severity = model::Severity::kInfo;
  v.mean_step_ns = static_cast<double>(t.step_ns);
  v.cost_pct = row_cost_pct(v, straggler_cost);
  return v;
}

}  // namespace ncclwatch::analysis

// Which ranks are stragglers, how (persistent, periodic, spikes), why (gpu-slow, host-stall,
// cpu-contention, network, unknown), and what each costs the job. A straggler is a rank whose
// lateness differs from its peers', not a rank that was ever late (reasoning:
// collector/analysis/README.md).
//
// Per steady step k and rank r: X[r][k] = its worst lateness in the step against each
// collective's median arrival; the step's reference is the median of X over ranks, and
// d[r][k] = X[r][k] − reference. Noise σ = median over ranks of 1.4826 x MAD(d[r]).
//   persistent: sign test on d[r] (P(>= as many late steps | fair coin) x ranks <= alpha) or a
//               z test of median(d[r]) against σ (Bonferroni over ranks, most steps late), and
//               an effect: median(d[r]) >= late = max(100 µs, 1% of a step);
//   periodic:   spike steps (d >= spike = max(500 µs, 10% of a step, 5σ)) on one phase of a
//               period, consistently (periodic_fit.h), chance excluded after correction,
//               and its off-phase steps alone not persistent (else: persistent);
//   spikes:     more spike steps than the peers' rate explains (binomial, corrected).
// Delays alike on every rank are nobody's: one job-wide figure (JobWideDelays), no straggler.
// Ranks late only because their collectives cross a slow network link (slow_link.h) are the
// link's, not stragglers. Causes: straggler_cause.h; prose: straggler_report.cpp.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "analysis/arrivals.h"
#include "analysis/overlap.h"
#include "analysis/slow_link.h"
#include "analysis/straggler_stats.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::analysis {

inline constexpr int64_t kLateFloorNs = 100'000;
inline constexpr int64_t kSpikeFloorNs = 500'000;
inline constexpr double kSpikeNoiseFactor = 5.0;  // spike threshold in units of σ
inline constexpr double kLateStepShare = 0.01;    // of the median steady step
inline constexpr double kSpikeStepShare = 0.10;
inline constexpr double kAlpha = 0.01;       // family-wise false-straggler rate per job
inline constexpr double kWarnCostPct = 1.0;  // a straggler costing less is info, not a warning

enum class Pattern : uint8_t { kPersistent, kPeriodic, kSpikes, kCount };
const char* to_string(Pattern p);

// Why a straggler is late. Names (text and JSON): gpu-slow, host-stall, network, unknown,
// cpu-contention (its NCCL-calling threads waited for a CPU: the shim's scheduling samples).
enum class Cause : uint8_t { kUnknown, kGpuSlow, kHostStall, kNetwork, kCpuContention, kCount };
const char* to_string(Cause c);

// The figures behind a cause; the report writer turns them into prose.
struct CauseEvidence {
  // kGpuSlow / kHostStall: the straggler's mean GPU figures per step against a baseline.
  double compute_ns = 0, idle_ns = 0, idle_before_comm_ns = 0;
  double base_compute_ns = 0, base_idle_ns = 0;
  bool against_own_steps = false;  // baseline: its other steps (periodic, spikes), else peers
  // kNetwork from transfer times: its comms' per-byte transfer over that of comms without it.
  double transfer_ratio = 0;
  // Run-queue wait of its NCCL-calling threads per step (cpu_wait.h) against the baseline (its
  // peers' median, or its other steps); NaN where not measured (no scheduling samples). Shown
  // whatever the cause; kCpuContention when the excess explains the lateness.
  double cpu_wait_ns = std::numeric_limits<double>::quiet_NaN();
  double base_cpu_wait_ns = std::numeric_limits<double>::quiet_NaN();
  // kUnknown: no GPU timing at all (host-only records), else no compute kernels (lite mode)
  // or figures that explain too little.
  bool host_only = false;
  bool no_compute = false;
};

struct Straggler {
  std::size_t rank_index = 0;
  int32_t rank = -1;
  std::string host;
  double arrived_last_pct = 0;
  double mean_lateness_ns = 0;       // vs the median rank, over all its instances
  double lateness_when_last_ns = 0;  // vs the median rank, over the instances it was last in
  int64_t inflicted_wait_ns = 0;
  Pattern pattern = Pattern::kPersistent;
  std::size_t period_steps = 0;          // kPeriodic: every N steps
  std::vector<std::size_t> spike_steps;  // kPeriodic / kSpikes: step indices (0-based)
  double spike_lateness_ns = 0;          // mean lateness in those steps
  bool node_problem = false;             // all ranks of its host are late together
  Cause cause = Cause::kUnknown;
  CauseEvidence evidence;
  // Where and how late, measured where it happens: its typical worst lateness per affected
  // step (persistent: median over its steady steps; periodic/spikes: mean over the spike
  // steps), at the `late_at_ordinal`-th call of the step (most often), a `late_at_func`.
  double lateness_ns = 0;
  std::size_t late_at_ordinal = 1;
  format::Func late_at_func = format::Func::kAllReduce;
  std::size_t late_steps = 0;    // steady steps in which it was late (>= half the threshold)
  std::size_t steady_steps = 0;  // its steady steps
  // Cost (docs/verdicts.md, "Figures"): the exposed waiting it caused its peers in the steady
  // steps, as a share of the job's rank-time (all ranks x step time), and the same share as
  // time per step (cost_pct x the mean step: what it takes from every rank's step on average).
  double cost_ns_per_step = 0;
  double cost_pct = 0;
  bool warning = false;  // cost_pct >= kWarnCostPct, and the data supports it
  double p_value = 1;    // of the test that named it, corrected for the ranks and candidates
  // Why a warning was made information (" — information only, not a warning: this rank lost
  // 95% of its records (...)"); empty: nothing.
  std::string unsupported;
};

struct NodeProblem {
  std::string host;
  std::vector<int32_t> ranks;
  double arrived_last_pct = 0;
  double mean_lateness_ns = 0;
  double lateness_ns = 0;  // mean over its ranks of Straggler::lateness_ns
  double cost_ns_per_step = 0;
  double cost_pct = 0;
  bool warning = false;
};

// Delays shared by every rank (OS jitter, GC, CPU contention): what they cost, no culprit.
struct JobWideDelays {
  double up_to_ns = 0;          // 99th percentile of non-straggler ranks' worst lateness per step
  double cost_ns_per_step = 0;  // exposed waiting no straggler explains (Straggler's unit)
  double cost_pct = 0;          // ... as a share of the job's rank-time
  bool reported = false;        // cost_pct >= kWarnCostPct: worth an info line
};

struct StragglerResult {
  ArrivalStats stats;
  std::vector<Straggler> stragglers;  // costliest first
  std::vector<NodeProblem> nodes;
  // Slow network links (slow_link.h); ranks late only because their collectives cross one are
  // listed there, not as stragglers.
  std::vector<SlowLink> links;
  int64_t late_ns = 0;
  int64_t spike_ns = 0;
  int64_t step_ns = 0;     // median steady step length (0: no steps)
  std::string timestamps;  // "GPU kernel starts", "host call entries", or both
  std::string what;        // "all-reduces" or "collectives"
  uint64_t instances = 0;
  int64_t tie_ns = 0;
  uint64_t gpu_instances = 0;         // instances whose arrivals are kernel starts
  uint64_t host_instances = 0;        // ... call entries
  std::vector<std::string> one_offs;  // single spike steps, for the section only
  std::size_t one_offs_total = 0;     // one_offs lists at most 16
  JobWideDelays delays;
  std::size_t ranks = 0;         // ranks with instances
  std::size_t steady_steps = 0;  // median over ranks
  bool per_step = true;          // samples are steps (else instances: no usable steps)
  // Per rank index (active ranks; others 0 / NaN): what the Stragglers table shows, with the
  // same definitions as a named straggler's figures — its cost (% of the job's rank-time) and
  // its lateness where it happens (median over its steady steps of its worst lateness per step).
  std::vector<double> rank_cost_pct;
  std::vector<double> rank_lateness_ns;
  double cost_unit_ns = 0;  // the mean steady step: cost_ns_per_step = cost_pct / 100 x this
  double alpha = kAlpha;

  static StragglerResult of(const model::JobTrace& job, const model::MatchResult& match,
                            const model::ClockAlignment& clocks, const Arrivals& arrivals,
                            const std::vector<RankOverlap>& overlaps, unsigned workers = 1);
};

}  // namespace ncclwatch::analysis

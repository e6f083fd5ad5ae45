// The shape of the graph, measured: GPU utilization over wall time, per rank and for the job,
// at a resolution that shows what happens inside a step — the curve a user reads ("sawtooth
// every step = data loader", "flat 50 % = tiny kernels", "one rank lagging") before touching code.
//
// Per time bin on the clock-aligned axis, the share of the bin in which each GPU-timed rank
//   busy     ran any kernel (what nvidia-smi's utilization counts; a rank spinning in an NCCL
//            kernel for a late peer is busy),
//   compute  ran a non-NCCL kernel (useful work),
//   comm     ran an NCCL kernel;
// the job's curve is the median over ranks with the min-max band of busy. Beside it, the same
// run as nvidia-smi / DCGM samples it: the busy share of each 1 s and 100 ms window from the
// job's first kernel, median over ranks (why a Grafana panel says 70 % where the fine curve
// drops to 0 every step).
//
// Bounded for any job: a whole-run overview of at most kCurveOverviewBins bins; a window of at most
// kCurveWindowSteps steps at ~kCurveBinsPerStep bins per step (every step when the run has no more;
// else from the first steady step, moved so that the first stall/checkpoint step is inside), with
// one row per rank up to kCurveMaxRows rows (past that, rows are groups of consecutive ranks in
// host order, their mean); samples merged in groups past kCurveMaxSamples. What was aggregated is
// stated in the result, so the page can say so.
//
// The sparkline: the job's median compute share over a few representative steps, at
// kSparklineChars bins — the steady steps from the first one, or the steps around the first
// stall/checkpoint step when the verdict is about those — for the text report's pattern line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/job_steps.h"
#include "analysis/rank_activities.h"
#include "analysis/step_plan.h"
#include "analysis/straggler_verdict.h"
#include "analysis/time_bins.h"
#include "analysis/utilization_pattern.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"

namespace ncclwatch::analysis {

inline constexpr std::size_t kCurveOverviewBins = 1000;
inline constexpr std::size_t kCurveBinsPerStep = 50;
inline constexpr std::size_t kCurveWindowSteps = 24;
inline constexpr std::size_t kCurveMaxRows = 32;
inline constexpr std::size_t kCurveMaxSamples = 600;
inline constexpr std::size_t kSparklineSteps = 4;
inline constexpr std::size_t kSparklineChars = 60;
inline constexpr std::size_t kCurveMaxSpecialSteps = 200;  // marked steps listed in the JSON

// Per bin, over the GPU-timed ranks; shares 0..1.
struct JobCurve {
  TimeBins bins;
  std::vector<float> busy, busy_min, busy_max;  // median, min, max over ranks
  std::vector<float> compute, comm;             // medians
};

// One row of the per-rank curve: a rank, or consecutive ranks (in host order) averaged.
struct CurveRow {
  int32_t first_rank = -1, last_rank = -1;
  std::size_t ranks = 0;
  std::string host;         // of its first rank
  std::size_t hosts = 1;    // distinct hosts in the row
  bool straggler = false;   // holds a straggler or a rank of a lagging node
  std::vector<float> busy;  // per bin of the window
};

// What a monitor sampling every `period_ns` would show: the busy share of each window, median
// (and min, max) over ranks. `merged` > 1: each point covers that many consecutive samples.
struct SampledCurve {
  int64_t period_ns = 0;
  std::size_t merged = 1;
  TimeBins bins;
  std::vector<float> busy, busy_min, busy_max;
};

struct StepMark {
  std::size_t step = 0;              // 1-based
  int64_t begin_ns = 0, end_ns = 0;  // aligned (median over ranks)
  std::string kind;                  // "", "warmup", "partial", "checkpoint", "stall"
};

struct Sparkline {
  std::size_t first_step = 0, last_step = 0;  // 1-based; 0: the run has no steps
  TimeBins bins;
  std::vector<float> compute;  // job median per bin
};

struct UtilizationCurve {
  std::size_t gpu_ranks = 0;
  std::size_t ranks = 0;
  int64_t origin_ns = 0;  // aligned time of the job's first kernel: x = 0
  JobCurve overview;      // the whole run
  JobCurve window;        // the steps [first_step, last_step], finely
  std::size_t first_step = 0, last_step = 0, total_steps = 0;  // 1-based; 0: no steps
  std::vector<CurveRow> rows;
  bool rows_aggregated = false;
  std::vector<StepMark> steps;        // every step (for the overview's marks) with its kind
  std::vector<SampledCurve> sampled;  // 1 s, 100 ms
  Sparkline sparkline;

  // `plans` per rank index; `verdict` names the stall/checkpoint steps; `stragglers` the rows to
  // highlight. `threads` as analyze().
  static UtilizationCurve of(const model::JobTrace& job, const model::ClockAlignment& clocks,
                             const RankActivities& activities,
                             const std::vector<const StepPlan*>& plans,
                             const PatternVerdict& verdict, const StragglerResult& stragglers,
                             unsigned threads);
};

// Ranks in host order (hosts in the order their first rank appears, ranks ascending within), as
// rank indices: the row order of the curve and the swimlanes ("nodes grouped").
std::vector<std::size_t> host_order(const model::JobTrace& job,
                                    const std::vector<std::size_t>& rank_indices);

}  // namespace ncclwatch::analysis

// Training steps of one rank: the unit in which overlap and lateness are reported.
//
// Steps come from the user's own ranges when the trace has them (NVTX "train_step",
// Kineto "ProfilerStep#N", ...), else from the period of the rank's collective sequence:
// DDP issues the same buckets (comm, op, bytes) every step, so the sequence of calls repeats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/interval_set.h"
#include "model/rank_trace.h"

namespace ncclwatch::analysis {

struct StepPlan {
  std::vector<Interval> steps;        // rank-local clock, in order, disjoint
  std::size_t warmup = 0;             // leading steps left out of the steady state
  std::string source;                 // how the steps were found, for the report
  std::vector<int32_t> step_of_call;  // per RankTrace::calls index: step index, -1 outside any

  // The steady-state window: from the first step after warm-up to the end of the last step;
  // [begin, end) of the whole trace when there are no steps.
  Interval steady;

  std::size_t steady_steps() const { return steps.size() > warmup ? steps.size() - warmup : 0; }
};

// Warm-up rule, stated in the report: with 3 or more steps the first step is left out (it
// carries lazy initialisation, allocator growth, NCCL setup and DDP's first-iteration
// bucket rebuild); with fewer every step counts.
inline constexpr std::size_t kMinStepsForWarmup = 3;

class StepDetector {
 public:
  // `trace_begin`/`trace_end` bound the rank's activity (used when no steps are found and for
  // the first step's start when steps come from the collective period).
  static StepPlan detect(const model::RankTrace& rank, int64_t trace_begin, int64_t trace_end);

  // Exposed for tests: true when `name` looks like a step range ("ProfilerStep#4",
  // "train_step", "Step 12", "step"), and the family key that groups one loop's ranges.
  static bool looks_like_step(const std::string& name);
  static std::string family_of(const std::string& name);

  // Exposed for tests: the smallest period p of `tokens` (repeats for >= 97% of positions
  // in the examined window, at least twice), 0 if none.
  static std::size_t period_of(const std::vector<uint64_t>& tokens);
};

}  // namespace ncclwatch::analysis

// Training steps of one rank: the unit in which overlap and lateness are reported.
//
// Steps come from the user's own ranges when the trace has them (NVTX "train_step",
// Kineto "ProfilerStep#N", ...), else from the period of the rank's collective sequence:
// DDP issues the same buckets (comm, op, bytes) every step, so the sequence of calls repeats.
// When every bucket looks the same, the gaps between calls say which multiple of that period is
// the step: first by the shim's own rules (ncclwatch/step_gaps.h, so that the report's steps and
// the rank's step summaries agree), then by the rules in step_plan.cpp for what those leave open.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/interval_set.h"
#include "model/job_trace.h"
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

  // Steps from the collective sequence: calls per step (0: from ranges, or none found), and
  // whether that period came from the pattern of the call gaps (no jump in them showed it).
  std::size_t calls_per_step = 0;
  bool from_gap_pattern = false;

  // Steps from ranges last until the next range starts; the last one has no next and ends with
  // its range: when the ranges leave gaps between them (the host's work before pushing the next
  // range: data loading), the last step lacks that part and is not comparable to the others.
  // Marked so that what draws steps (the HTML page) can leave it out; the analyses keep it.
  bool last_partial = false;

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
  // `calls_per_step`: when the steps come from the collective sequence, take this many calls
  // per step if it is a multiple of the sequence's period (agree()), else find it.
  static StepPlan detect(const model::RankTrace& rank, int64_t trace_begin, int64_t trace_end,
                         std::size_t calls_per_step = 0);

  // A synchronous job has one step on every rank: every rank runs the same collective
  // sequence, one pass of it per step. Ranks that found different steps take the step of all
  // their gaps together when the shim's gap rules (ncclwatch/step_gaps.h) find one in the median
  // gap before each call across the ranks (a busy machine delays each rank at other calls, and
  // blurred one rank's gaps into a part of the step). Else a rank whose step is a multiple of the
  // calls per step a strict majority of the ranks found takes theirs: a rank stalling before every
  // Nth step repeats its gaps every N steps, and its stall is a wider gap than its forward pass (a
  // jump in its gaps) or, with little noise, that longer period predicts its gaps best.
  // `bounds[i]`: rank i's trace_begin/trace_end, as given to detect().
  static void agree(const model::JobTrace& job, const std::vector<Interval>& bounds,
                    std::vector<StepPlan>& plans);

  // Exposed for tests: true when `name` looks like a step range ("ProfilerStep#4",
  // "train_step", "Step 12", "step"), and the family key that groups one loop's ranges.
  static bool looks_like_step(const std::string& name);
  static std::string family_of(const std::string& name);

  // Exposed for tests: the smallest period p of `tokens` (repeats for >= 97% of positions
  // in the examined window, at least twice), 0 if none.
  static std::size_t period_of(const std::vector<uint64_t>& tokens);
};

}  // namespace ncclwatch::analysis

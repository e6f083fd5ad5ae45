// The job's steps on the clock-aligned axis. Every rank has its own step plan (step_plan.h) on
// its own clock; step k of the job is step k of each rank, placed at the median of their aligned
// begins and ends (where the job is in step k), with the earliest begin and latest end (where
// any rank is in it: a straggler's late start, the others' wait). For drawing: the utilization
// curve's step marks and the swimlanes' windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/step_plan.h"
#include "model/clock_alignment.h"

namespace ncclwatch::analysis {

struct JobStep {
  std::size_t index = 0;  // 0-based; the report says index + 1
  int64_t begin_ns = 0;   // median over ranks, aligned
  int64_t end_ns = 0;
  int64_t first_begin_ns = 0;  // earliest rank
  int64_t last_end_ns = 0;     // latest rank
  std::size_t ranks = 0;       // ranks that have this step
  bool warmup = false;
  bool partial = false;  // StepPlan::last_partial on most of its ranks
  int64_t length() const { return end_ns - begin_ns; }
};

// `plans` per rank index (nullptr: leave the rank out, e.g. no GPU timeline). A step is kept
// when at least half of the ranks with steps have it.
std::vector<JobStep> job_steps(const std::vector<const StepPlan*>& plans,
                               const model::ClockAlignment& clocks);

// Median length of the steady steps (not warm-up, not partial); of all steps if none is; 0
// without steps.
int64_t median_step_ns(const std::vector<JobStep>& steps);

}  // namespace ncclwatch::analysis

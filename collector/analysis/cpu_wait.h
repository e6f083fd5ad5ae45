// How long a rank's NCCL-calling threads waited for a CPU in each of its steps, from the trace's
// scheduling samples (model::SchedSample: run-queue wait, cumulative per thread, read by the
// shim's drain thread every 20 ms or so). A rank whose process waits for a CPU (other processes
// on its cores, an oversubscribed node) arrives late at its collectives; straggler_cause compares
// its wait per step with its peers' (or its other steps') to name `cpu-contention`.
#pragma once

#include <limits>
#include <vector>

#include "analysis/step_plan.h"
#include "model/rank_trace.h"

namespace ncclwatch::analysis {

// Per step of `plan`: the wait of the rank's sampled threads inside the step and outside its
// NCCL calls, summed over its threads; NaN where no thread's samples cover any of the step.
// Between two samples of a thread its wait grew at a constant rate over the time outside the
// rank's calls: wait inside a call delays nobody (the thread waits for its peers there, and a
// spin or sleep loop's wake-ups queue for a CPU on a busy machine), so an interval spent in
// calls alone contributes nothing. Samples come every ~20 ms around a change (the shim's
// sampler), so a call shorter than that is not told apart from the time around it. Empty when the
// trace has no samples (Kineto traces, layout versions before 4, no /proc). A thread whose
// cumulative wait goes down (a damaged file, a reused thread id) contributes nothing over that
// interval.
std::vector<double> cpu_wait_per_step(const model::RankTrace& rank, const StepPlan& plan);

// Mean of `per_step` over the steps k >= `first` that `keep(k)` accepts and that have a value;
// NaN when none has.
template <typename Keep>
double mean_cpu_wait(const std::vector<double>& per_step, std::size_t first, Keep keep) {
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t k = first; k < per_step.size(); ++k) {
    if (per_step[k] == per_step[k] && keep(k)) {  // not NaN
      sum += per_step[k];
      ++n;
    }
  }
  return n ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace ncclwatch::analysis

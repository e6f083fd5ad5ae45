// What the analyses take from one rank's GPU records (kernels, memcpy/memset, launches, kernel
// links), taken while the whole rank is in memory so that the loaded job can drop those records:
// they are ~95 % of a full-mode trace and nothing else needs them once they are linked to their
// calls (issue 24; collector/pipeline/lean_load.h drops them). Every part is what the analyses
// compute from a whole rank, by the same functions: a report from digests is the report from
// whole ranks, byte for byte (tests/collector/pipeline/lean_load_test.cpp proves it on every
// scenario).
//
// Two parts depend on the rank's steps: compute kernels per step (the step breakdown) and the
// kernel table's part. They are taken under the steps the rank finds alone (StepDetector::detect
// over its activity); when StepDetector::agree() gives it the job's steps instead, the analysis
// reads the rank again (RankDigest::reload) to take them under those. That happens to ranks whose
// own step is a multiple of the job's (a rank stalling every Nth step): a few ranks at most.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/interval_set.h"
#include "analysis/kernel_table.h"
#include "analysis/packed_activity.h"
#include "analysis/rank_activity.h"
#include "analysis/step_plan.h"
#include "model/rank_trace.h"

namespace ncclwatch::analysis {

// Compute kernels per measured window of a rank, under one step plan.
struct StepKernels {
  std::vector<Interval> step_windows;   // StepBreakdownAnalysis::windows_of(plan)
  std::vector<int64_t> per_step;        // compute_kernels_in(rank, step_windows)
  std::vector<Interval> table_windows;  // KernelTable::windows_of(plan)
  RankKernels table;                    // KernelTable::of_rank(rank, table_windows)

  static StepKernels of(const model::RankTrace& rank, const StepPlan& plan);
  // Taken under `plan`'s windows (what analyze() checks before using them).
  bool fits(const StepPlan& plan) const;
};

// At most this many compute-kernel durations per rank for the utilization pattern's median kernel
// (a stride over the whole rank, so long runs are sampled evenly, not by their first steps).
inline constexpr std::size_t kKernelSamplePerRank = 2048;
std::vector<int64_t> kernel_duration_sample(const model::RankTrace& rank);

struct RankDigest {
  PackedActivity activity;                     // RankActivity::of, packed
  std::optional<IntervalSet> compute_windows;  // DataSupport::compute_windows_of
  StepKernels step_kernels;                    // under the rank's own steps
  std::vector<int64_t> kernel_sample;          // kernel_duration_sample
  // The whole rank again, linked, as first loaded; nullopt with `why` when it cannot be read the
  // same (the file changed or went away).
  std::function<std::optional<model::RankTrace>(std::string& why)> reload;

  // `rank` whole and linked.
  static RankDigest of(const model::RankTrace& rank);
};

// The rank's records are one whole run: no capture window cuts them (no window marks, or a
// whole-run one). A report of a windowed run cuts each window out of the records, so only such a
// rank may have its GPU records dropped for a digest.
bool records_are_one_whole_run(const model::RankTrace& rank);

// What the collector's own checks need of the GPU records (model/dropped_gpu_records.h).
model::DroppedGpuRecords dropped_records_of(const model::RankTrace& rank);

// Sets the rank's digest (with `reload`) and dropped-record summary, then drops its GPU records.
// `rank` is whole and linked (the pipeline's GPU linking stage then has nothing left to do).
void digest_and_drop(model::RankTrace& rank,
                     std::function<std::optional<model::RankTrace>(std::string& why)> reload);

// The rank's compute kernels per window under `plan`: its digest's own (shared, not copied: a copy
// is ~40 bytes per rank-step) when that was taken under these windows, else counted from its GPU
// records (read again when they were dropped; when that fails, none, and `why` says so).
std::shared_ptr<const StepKernels> step_kernels_for(const model::RankTrace& rank,
                                                    const StepPlan& plan, std::string& why);

}  // namespace ncclwatch::analysis

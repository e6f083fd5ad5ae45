// The all-reduces that repeat every step (DDP's gradient buckets), identified by communicator,
// position within the step and size, with how much of each hides behind compute.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/overlap.h"
#include "analysis/rank_activities.h"
#include "model/job_trace.h"

namespace ncclwatch::analysis {

struct BucketRow {
  uint64_t comm_id = 0;
  std::size_t ordinal = 0;  // position among this comm's all-reduces in the step (0 = first)
  uint64_t bytes = 0;
  uint64_t occurrences = 0;   // (rank, steady step) pairs where it was seen
  int64_t gpu_ns = 0;         // total GPU time over the occurrences
  int64_t overlapped_ns = 0;  // part of gpu_ns during compute
  // Spread over the occurrences (what `ncclwatch diff` weighs a change against): sums of the
  // overlapped share and of its square, and of the squared exposed time.
  double share_sum = 0, share_sq = 0, exposed_sq_ns2 = 0;
  double mean_gpu_ns() const {
    return occurrences ? static_cast<double>(gpu_ns) / static_cast<double>(occurrences) : 0.0;
  }
  double overlapped_pct() const {
    return gpu_ns > 0 ? 100.0 * static_cast<double>(overlapped_ns) / static_cast<double>(gpu_ns)
                      : 0.0;
  }
  // Standard deviations over the occurrences: overlapped share (percentage points), exposed ns.
  double overlapped_pct_sd() const;
  double exposed_ns_sd() const;
  // Exposed time of this bucket per step (mean over ranks and steps).
  double exposed_ns_per_step() const {
    return occurrences
               ? static_cast<double>(gpu_ns - overlapped_ns) / static_cast<double>(occurrences)
               : 0.0;
  }
};

class BucketTable {
 public:
  // A bucket is kept when it occurs in at least half of the steady (rank, step) pairs: the
  // ones that repeat every step, not a one-off all-reduce (loss logging, evaluation, ...).
  static std::vector<BucketRow> of(const model::JobTrace& job,
                                   const std::vector<RankOverlap>& overlaps,
                                   const RankActivities& activities);
};

}  // namespace ncclwatch::analysis

// Overlap of communication with computation, per rank and per step, in HTA's terms:
//   comm = union of NCCL kernel intervals, compute = union of all other kernels (memcpy and
//   memset are neither), overlap = |comm ∩ compute| / |comm|.
// Exposed communication (comm − compute) is split into waiting for peers and transfer (the
// rest). Waiting is the time inside collectives before their last member arrived, counted
// against the exposed time up to its size: min(peer wait, exposed). A wait that compute hides
// still pushes every later collective of the chain back (DDP's buckets queue on one stream),
// so a plain intersection with the exposed intervals would credit it all to "transfer"; the
// min is exact for such a chain and an upper bound when the chain has slack.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/interval_set.h"
#include "analysis/rank_activity.h"
#include "analysis/step_plan.h"
#include "model/rank_trace.h"

namespace ncclwatch::analysis {

// HTA's comm/compute overlap of one rank within [from_ns, to_ns) on the rank's own clock:
// |comm ∩ compute| / |comm| in [0, 1]. NaN when no communication falls in the window. Pass
// INT64_MIN/INT64_MAX (or use the overload) for the whole trace.
double overlap_fraction(const model::RankTrace& rank, int64_t from_ns, int64_t to_ns);
double overlap_fraction(const model::RankTrace& rank);

struct OverlapTotals {
  int64_t window_ns = 0;
  int64_t comm_ns = 0;
  int64_t overlapped_ns = 0;
  int64_t exposed_ns = 0;
  int64_t peer_wait_ns = 0;  // inside collectives before their last member arrived
  int64_t wait_ns = 0;       // of exposed_ns: min(peer_wait_ns, exposed_ns)
  int64_t compute_ns = 0;
  int64_t busy_ns = 0;              // any GPU activity
  int64_t idle_before_comm_ns = 0;  // idle gaps that end where a collective starts
  int64_t transfer_ns() const { return exposed_ns - wait_ns; }
  int64_t idle_ns() const { return window_ns - busy_ns; }
};

// One per rank-step, for the job's life: 80 bytes (its window is the plan's step `index`).
struct StepOverlap {
  uint32_t index = 0;
  bool warmup = false;
  bool sampled = true;  // compute kernels recorded over its whole window (NCCLWATCH_KERNELS)
  OverlapTotals totals;
};
static_assert(sizeof(StepOverlap) == 80, "see the comment above StepOverlap");

struct RankOverlap {
  std::size_t rank_index = 0;
  int32_t rank = -1;
  std::string host;
  CommSource source = CommSource::kNone;
  bool measurable = false;  // comm and compute both recorded: overlap, exposed, busy are meaningful
  StepPlan plan;
  // Over plan.steady; when compute was recorded only in windows (NCCLWATCH_KERNELS=sampled:N),
  // the sum over the steady steps inside them (`steady_steps` of them): the other steps' compute
  // is unknown.
  OverlapTotals steady;
  std::size_t steady_steps = 0;
  bool sampled = false;  // steady is over the sampled steps only
  std::vector<StepOverlap> steps;

  double overlap_pct() const {
    return steady.comm_ns > 0 ? 100.0 * static_cast<double>(steady.overlapped_ns) /
                                    static_cast<double>(steady.comm_ns)
                              : 0.0;
  }
  double busy_pct() const {
    return steady.window_ns > 0
               ? 100.0 * static_cast<double>(steady.busy_ns) / static_cast<double>(steady.window_ns)
               : 0.0;
  }
};

class OverlapAnalysis {
 public:
  // `wait` is the rank's peer-wait set (peer_wait_sets in arrivals.h), rank clock.
  // `compute_windows`: where compute kernels were recorded (DataSupport), null: everywhere.
  static RankOverlap of_rank(const model::RankTrace& rank, std::size_t rank_index,
                             const RankActivity& activity, StepPlan plan, const IntervalSet& wait,
                             const IntervalSet* compute_windows = nullptr);
};

}  // namespace ncclwatch::analysis

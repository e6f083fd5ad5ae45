// One step, every rank: what each GPU did through one step on the clock-aligned axis, one row
// per rank (nodes grouped), like Nsight Systems' rows per GPU — so the straggler and the ranks
// waiting for it are seen at once. Two steps: a representative steady one (the median job step
// time) and the worst (the longest), when it is at least 2 % longer.
//
// Each row is cut into kLaneBins bins across the step's window (from the earliest rank's start of
// the step to the latest rank's end); a bin gets the state that takes most of it:
//   compute    a non-NCCL kernel ran (communication under it is hidden, not drawn)
//   wait       an NCCL kernel ran, not under compute, before the collective's last member arrived
//   transfer   an NCCL kernel ran, not under compute, after that (the exposed transfer)
//   memcpy     memcpy/memset while no kernel ran
//   idle       nothing ran
// (the step breakdown's parts, step_breakdown.h, in time order). Past kMaxLaneRows ranks a row
// is a group of consecutive ranks in host order; its bin shows the state most of them are in.
// Runs of one state are stored as [first bin, bins, state].
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/interval_set.h"
#include "analysis/job_steps.h"
#include "analysis/rank_activities.h"
#include "analysis/step_plan.h"
#include "analysis/straggler_verdict.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"

namespace ncclwatch::analysis {

inline constexpr std::size_t kLaneBins = 240;
inline constexpr std::size_t kMaxLaneRows = 64;

enum class LaneState : uint8_t { kIdle = 0, kCompute, kWait, kTransfer, kMemcpy };
inline constexpr std::size_t kLaneStates = 5;
const char* to_string(LaneState s);

struct LaneRow {
  int32_t first_rank = -1, last_rank = -1;
  std::size_t ranks = 0;
  std::string host;
  bool straggler = false;
  std::vector<std::array<uint32_t, 3>> runs;  // first bin, bins, LaneState
};

struct StepLanes {
  std::string why;       // "representative" or "worst"
  std::size_t step = 0;  // 1-based
  int64_t begin_ns = 0;  // aligned
  int64_t end_ns = 0;
  int64_t step_ns = 0;  // the job's step time (median over ranks)
  std::size_t bins = 0;
  std::vector<LaneRow> rows;
  bool rows_aggregated = false;
  // Rank indices in row order: row g holds the next rows[g].ranks of them (for mark_stragglers).
  std::vector<std::size_t> order;
};

class StepSwimlanes {
 public:
  // `plans` and `waits` (peer-wait sets, arrivals.h) per rank index, rank clock. The rows are not
  // marked yet: drawn before the straggler verdict, the waits can be freed before it runs (they
  // are ~130 bytes per rank-step, and the verdict's pass is where the analyses peak).
  static std::vector<StepLanes> draw(const model::JobTrace& job,
                                     const model::ClockAlignment& clocks,
                                     const RankActivities& activities,
                                     const std::vector<const StepPlan*>& plans,
                                     const std::vector<IntervalSet>& waits);
  // Marks each row that holds a straggler or a rank of a late node.
  static void mark_stragglers(const model::JobTrace& job, const StragglerResult& stragglers,
                              std::vector<StepLanes>& lanes);
};

}  // namespace ncclwatch::analysis

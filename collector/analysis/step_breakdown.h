// Where each step's time went, per rank and per step: the figures behind "why is GPU
// utilization low" and "why is a 95 % busy GPU still slow".
//
// GPU-timed ranks (CUPTI or Kineto kernels): the step window is cut into parts that add up to
// the step time exactly:
//   compute            non-NCCL kernels (communication running underneath is comm_overlapped,
//                      a part of this time, not an extra one)
//   exposed wait       NCCL kernels not hidden by compute, while waiting for the last peer
//   exposed transfer   the rest of the exposed NCCL kernel time
//   memcpy             memcpy/memset while no kernel runs
//   idle               no GPU activity, split by what the GPU was waiting for:
//     before comm      gaps that end where a collective starts (the host was late to launch it)
//     step boundary    idle touching the step's start or end, and the longest other gap of the
//                      step that does not end at a collective: the one drop per step that the
//                      host spends outside the GPU's queue (data loading, .item() syncs,
//                      checkpoint writes)
//     other            every other gap (launch overhead between kernels, small syncs)
// "what nvidia-smi shows" = any kernel running (compute + exposed comm); "useful compute" =
// compute only. A GPU spinning in an NCCL kernel for a late peer counts as busy for nvidia-smi.
//
// Host-only (and lite-mode) ranks have no compute kernels: the step splits on the host side
// into time inside NCCL calls and time between them, labelled as such.
//
// Windows are the step plan's steps (contiguous: a user range lasts until the next one starts,
// so the idle after a step range belongs to that step); a gap left between steps would be
// counted in the following one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/interval_set.h"
#include "analysis/rank_activity.h"
#include "analysis/step_plan.h"
#include "model/rank_trace.h"

namespace ncclwatch::analysis {

enum class BreakdownBasis : uint8_t {
  kGpu = 0,   // kernel timeline
  kHost = 1,  // NCCL call enter/exit on the host
};
const char* to_string(BreakdownBasis basis);

struct StepTimes {
  int64_t step_ns = 0;
  // kGpu
  int64_t compute_ns = 0;
  int64_t comm_overlapped_ns = 0;  // part of compute_ns's time during which comm also ran
  int64_t exposed_wait_ns = 0;
  int64_t exposed_transfer_ns = 0;
  int64_t memcpy_ns = 0;
  int64_t idle_before_comm_ns = 0;
  int64_t idle_step_boundary_ns = 0;
  int64_t idle_other_ns = 0;
  int64_t kernels = 0;  // compute kernels starting in the window
  // kHost
  int64_t host_in_nccl_ns = 0;
  int64_t host_between_ns = 0;

  int64_t exposed_ns() const { return exposed_wait_ns + exposed_transfer_ns; }
  int64_t idle_ns() const { return idle_before_comm_ns + idle_step_boundary_ns + idle_other_ns; }
  // What nvidia-smi's utilization counts: any kernel running.
  int64_t smi_busy_ns() const { return compute_ns + exposed_ns(); }
  StepTimes& operator+=(const StepTimes& o);
};

// One per rank-step, for the job's life: 104 bytes (its window is windows_of(plan)[index]).
struct StepBreakdown {
  uint32_t index = 0;
  bool warmup = false;
  bool sampled = true;   // compute kernels recorded over its whole window (NCCLWATCH_KERNELS)
  bool partial = false;  // StepPlan::last_partial: the last step, missing its tail
  StepTimes times;
};
static_assert(sizeof(StepBreakdown) == 104, "see the comment above StepBreakdown");

struct RankBreakdown {
  std::size_t rank_index = 0;
  int32_t rank = -1;
  std::string host;
  BreakdownBasis basis = BreakdownBasis::kHost;
  bool steps_found = false;  // false: one window over the whole trace
  std::vector<StepBreakdown> steps;
  StepTimes steady;  // sum over the steps after warm-up (sampled ones only when `sampled`)
  std::size_t steady_steps = 0;
  bool sampled = false;  // compute recorded only in windows: steady is over the steps inside

  double smi_pct() const { return share(steady.smi_busy_ns()); }
  double useful_pct() const { return share(steady.compute_ns); }
  double share(int64_t ns) const {
    return steady.step_ns > 0
               ? 100.0 * static_cast<double>(ns) / static_cast<double>(steady.step_ns)
               : 0.0;
  }
};

class StepBreakdownAnalysis {
 public:
  // `wait` is the rank's peer-wait set (peer_wait_sets in arrivals.h), rank clock.
  // `compute_windows`: where compute kernels were recorded (DataSupport), null: everywhere.
  // `compute_kernels`: compute_kernels_in(rank, windows_of(plan)) when the caller has it (the
  // rank's GPU records may be dropped: analysis/rank_digest.h); null: counted here.
  static RankBreakdown of_rank(const model::RankTrace& rank, std::size_t rank_index,
                               const RankActivity& activity, const StepPlan& plan,
                               const IntervalSet& wait,
                               const IntervalSet* compute_windows = nullptr,
                               const std::vector<int64_t>* compute_kernels = nullptr);

  // The windows a rank's steps are measured over: each step from the previous one's end (the
  // host's work between steps belongs to the next one), or the steady window without steps.
  static std::vector<Interval> windows_of(const StepPlan& plan);
  // Compute kernels (not NCCL, not memcpy/memset) starting in each window.
  static std::vector<int64_t> compute_kernels_in(const model::RankTrace& rank,
                                                 const std::vector<Interval>& windows);
};

}  // namespace ncclwatch::analysis

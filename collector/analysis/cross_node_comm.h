// Tensor-parallel-like communicators that span nodes: many small collectives per step, mostly
// not hidden by compute and issued between compute kernels (each layer blocks on one), on a
// communicator whose ranks sit on two or more hosts. Every such collective crosses the slowest
// link of the job once per layer: tensor parallelism belongs inside a node (NVLink).
//
// Rule (stated in the report): a communicator spanning 2+ hosts whose GPU-timed ranks issue
// >= kTpMinPerStep collectives per steady step (median over ranks), of median size
// <= kTpMaxBytes, less than half of their GPU time overlapped by compute, and at least half of
// consecutive pairs in a step separated by compute. Calls are placed in steps by their GPU start.
// DDP's gradient buckets fail the last two (overlapped with backward, or issued back to back after
// it). Needs GPU timing: host-only records are not judged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/rank_activities.h"
#include "analysis/step_plan.h"
#include "model/job_trace.h"

namespace ncclwatch::analysis {

inline constexpr double kTpMinPerStep = 16;
inline constexpr uint64_t kTpMaxBytes = 64ull << 20;
inline constexpr double kTpMaxOverlap = 0.5;
inline constexpr double kTpMinInterleaved = 0.5;

struct CrossNodeComm {
  uint64_t comm_id = 0;
  int32_t nranks = 0;
  std::size_t hosts = 0;
  std::size_t gpu_ranks = 0;  // members with GPU timing that were measured
  double per_step = 0;        // collectives per steady step, median over those ranks
  uint64_t median_bytes = 0;
  double overlap_pct = 0;      // of their GPU time, hidden by compute
  double interleaved_pct = 0;  // consecutive pairs in a step with compute between them
  std::string what;            // "all-reduces", "all-gathers", ... or "collectives"
  bool tensor_parallel_like = false;

  static std::vector<CrossNodeComm> find(const model::JobTrace& job,
                                         const RankActivities& activities,
                                         const std::vector<const StepPlan*>& plans);
};

}  // namespace ncclwatch::analysis

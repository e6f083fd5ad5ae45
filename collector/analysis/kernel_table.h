// Where the GPU time goes by kernel: the kernels that take most time per steady step, names
// normalized (kernel_names.h) so that two builds of one model compare name by name, with the
// step-to-step spread of each one's time (what `ncclwatch diff` calls noise), and the share of
// NCCL kernel time per algorithm/protocol the NCCL kernel names carry. Bounded: kMaxRows rows,
// whatever the number of distinct kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/overlap.h"
#include "model/job_trace.h"
#include "model/report.h"

namespace ncclwatch::analysis {

struct KernelRow {
  std::string name;  // normalized
  bool nccl = false;
  double ns_per_step = 0;     // mean over the measured ranks (0 on ranks that never ran it)
  double calls_per_step = 0;  // same
  double spread_ns = 0;       // mean over the measured ranks of the std-dev of its time per step
  std::size_t ranks = 0;      // ranks that ran it in their steady steps
};

// One normalized kernel name on one rank, over its steady windows.
struct RankKernel {
  std::string name;
  bool nccl = false;
  int64_t total_ns = 0;
  uint64_t calls = 0;
  double sum_sq = 0;              // sum over windows of (time in the window)^2
  int64_t window_ns = 0;          // time in the current window
  std::size_t window = SIZE_MAX;  // the window window_ns belongs to
};

// One rank's part of the table: what KernelTable::merge adds up.
struct RankKernels {
  std::vector<RankKernel> kernels;
  std::size_t windows = 0;  // steady steps, or 1 without steps
};

struct KernelTable {
  static constexpr std::size_t kMaxRows = 30;

  std::vector<KernelRow> rows;  // the kMaxRows kernels with most time per step, largest first
  std::size_t ranks = 0;        // ranks with kernels in steady steps (the "measured" ranks)
  std::size_t rank_steps = 0;   // their steady steps, summed (a rank without steps counts 1)
  std::size_t names = 0;        // distinct normalized names
  double compute_ns_per_step = 0;
  double nccl_ns_per_step = 0;
  double unlisted_ns_per_step = 0;  // kernels beyond the listed rows
  // "RING/LL" -> share (0-100) of NCCL kernel time, largest first; "other" for names without one.
  std::vector<std::pair<std::string, double>> nccl_algorithms;

  // Per rank the kernels (not memcpy/memset) that start in its steady steps (overlaps[i].plan);
  // a rank without steps is one window over its whole trace.
  // The windows of one rank: its steps after warm-up, or its whole trace.
  static std::vector<Interval> windows_of(const StepPlan& plan);
  static RankKernels of_rank(const model::RankTrace& rank, const std::vector<Interval>& windows);
  // The table of the ranks' parts, in rank order.
  static KernelTable merge(const std::vector<RankKernels>& ranks);
  // JSON `kernels[]` and `kernels_analysis` (docs/report-schema.md).
  void write_json(model::Report& report) const;
};

}  // namespace ncclwatch::analysis

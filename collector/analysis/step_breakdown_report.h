// The "Step breakdown" section (per rank, mean per steady step; job line with what nvidia-smi
// would show next to the useful compute share) and JSON breakdown[] / breakdown_analysis.
#pragma once

#include <vector>

#include "analysis/step_breakdown.h"
#include "model/report.h"

namespace ncclwatch::analysis {

// Means over the GPU-timed ranks' steady steps (each rank weighted by its steady time).
struct JobBreakdown {
  std::size_t gpu_ranks = 0;
  std::size_t host_ranks = 0;
  StepTimes gpu;   // summed over GPU-timed ranks' steady steps
  StepTimes host;  // summed over host-basis ranks' steady steps
  std::size_t gpu_rank_steps = 0;
  std::size_t host_rank_steps = 0;
  double smi_pct() const;
  double useful_pct() const;
  double gpu_share(int64_t ns) const;  // of the GPU-timed step time, %
  static JobBreakdown of(const std::vector<RankBreakdown>& ranks);
};

class StepBreakdownReport {
 public:
  static void write(const std::vector<RankBreakdown>& ranks, model::Report& report);
};

}  // namespace ncclwatch::analysis

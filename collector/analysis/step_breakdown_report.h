// The "Step breakdown" section (per rank, mean per steady step; job line with what nvidia-smi
// would show next to the useful compute share) and JSON breakdown[] / breakdown_analysis.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/data_support.h"
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
  std::size_t sampled_ranks = 0;    // GPU-timed ranks whose figures come from sampled steps
  std::size_t unsampled_ranks = 0;  // ... with no steady step inside a sampled window (not counted)
  double smi_pct() const;
  double useful_pct() const;
  double gpu_share(int64_t ns) const;  // of the GPU-timed step time, %
  static JobBreakdown of(const std::vector<RankBreakdown>& ranks);
};

// JSON breakdown[].per_step stays bounded for big jobs (4096 ranks x 10 000 steps would be 41 M
// entries, gigabytes of JSON): each rank gets at most
//   clamp(kPerStepBudget / ranks, kMinPerStepEntries, kMaxPerStepEntries)
// entries. A rank with more steps keeps its warm-up steps as entries of their own and merges its
// steady steps into that many groups of consecutive steps (equal sizes, +-1): a merged entry
// carries the per-step means over its steps, step .. last_step, merged_steps and step_us_max (so
// a checkpoint spike stays visible). Small jobs keep one entry per step.
inline constexpr std::size_t kPerStepBudget = 65'536;
inline constexpr std::size_t kMinPerStepEntries = 16;
inline constexpr std::size_t kMaxPerStepEntries = 1'000;

class StepBreakdownReport {
 public:
  // `rows`: rank_json of each of `ranks`, in the same order (built in parallel by analyze()).
  // `support`: sampled compute kernels and one rank alone are said in the section.
  static void write(const std::vector<RankBreakdown>& ranks, std::vector<nlohmann::json> rows,
                    const DataSupport& support, model::Report& report);
  // One rank's breakdown[] entry, per_step included, in a job of `job_ranks` ranks.
  static nlohmann::json rank_json(const RankBreakdown& rank, std::size_t job_ranks);
  // Most per_step entries a rank gets in a job of `ranks` ranks (the rule above).
  static std::size_t per_step_limit(std::size_t ranks);
  // One rank's per_step array, `limit` entries at most.
  static nlohmann::json per_step_json(const RankBreakdown& rank, std::size_t limit);
};

}  // namespace ncclwatch::analysis

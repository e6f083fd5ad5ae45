// How much the step and each of its parts vary from one steady step to the next: the noise
// against which `ncclwatch diff` judges a change between two runs. The series is the job's
// per-step value — step k's figure averaged over the ranks that have step k (on the basis the
// breakdown used: GPU-timed ranks, else the host-side split) — so a delay every rank shares
// counts once and independent per-rank jitter averages out as it does in the job's mean.
// Per figure: the series' mean, its robust spread (1.4826 x MAD: a checkpoint spike every
// 100 steps does not inflate it) and the standard error of its mean (std-dev / sqrt(steps):
// spikes do count there).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/step_breakdown.h"

namespace ncclwatch::analysis {

class StepSpread {
 public:
  // breakdown_analysis.steady: {basis, ranks, steps, mean_us{}, spread_us{}, sem_us{}}, or
  // null when no rank has a steady step.
  static nlohmann::json steady_json(const std::vector<RankBreakdown>& ranks);
};

}  // namespace ncclwatch::analysis

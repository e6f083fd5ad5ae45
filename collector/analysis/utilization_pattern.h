// The pattern verdict: which row of the practitioners' table of low-utilization shapes this
// job's GPU timeline matches, with the evidence, or "none of the usual patterns".
//
//   row                 shape                                    checked as (steady steps)
//   lagging             one GPU / node lagging the rest          a straggler or node problem
//   checkpoint          sawtooth aligned with save intervals     spike steps (the step-boundary
//                                                                idle of 75 %+ of ranks exceeds
//                                                                their usual by 10 % of a step)
//                                                                at most half the steps, 3+ of
//                                                                them on one spacing (all of
//                                                                its positions, 60 %+ of the
//                                                                spikes: an odd hiccup is left
//                                                                out)
//   dataloader          sawtooth, drops to 0 % every step        75 %+ of ranks idle >= 10 % of
//                                                                the step at its boundary in
//                                                                75 %+ of their steps
//   collective-drops    drops correlated with collectives        exposed comm + idle before
//                                                                collectives >= 15 % of the step
//   flat-low            flat, steady 30-60 %                     nvidia-smi view < 80 %, idle
//                                                                between kernels >= 10 % of the
//                                                                step and at least half the idle,
//                                                                per-step utilization steady
//                                                                (std-dev <= 10 points)
// First match wins, in this order — except that a job-wide stall (checkpoint, dataloader)
// comes first when the straggler is less late than half the stall: it is then the stall's uneven
// tail, named in the text. Utilization is graded against the 80-90 % that well-tuned
// single-node jobs sustain (multi-node jobs with heavy cross-node traffic run somewhat lower).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/step_breakdown.h"
#include "analysis/straggler_verdict.h"
#include "model/job_trace.h"
#include "model/report.h"

namespace ncclwatch::analysis {

inline constexpr double kDropShare = 0.10;  // boundary idle >= 10 % of the step
inline constexpr double kMostRanks = 0.75;
inline constexpr double kMostSteps = 0.75;
inline constexpr std::size_t kMinSaveSpikes = 3;
inline constexpr double kCollectiveShare = 0.15;  // exposed comm + idle before comm
inline constexpr double kWellTunedPct = 80.0;
inline constexpr double kFlatSpreadPct = 10.0;
// A straggler less late than this share of a job-wide stall is that stall's tail (side note).
inline constexpr double kMinorLateness = 0.5;  // per-step utilization std-dev, points

struct PatternVerdict {
  std::string row;  // lagging | checkpoint | dataloader | collective-drops | flat-low | none |
                    // healthy | not-judged
  model::Severity severity = model::Severity::kInfo;
  std::string text;    // the finding
  double smi_pct = 0;  // job, GPU-timed ranks
  double useful_pct = 0;
  std::size_t gpu_ranks = 0;
  std::vector<std::size_t> spike_steps;  // checkpoint: 1-based step numbers
  std::size_t period_steps = 0;
  double boundary_idle_pct = 0;  // dataloader/checkpoint evidence
  double comm_drop_pct = 0;      // exposed comm + idle before comm, of the step
  double kernel_median_us = 0;   // compute kernels, flat-low evidence
  double step_spread_pct = 0;    // std-dev of per-step utilization (points)

  static PatternVerdict judge(const model::JobTrace& job, const std::vector<RankBreakdown>& ranks,
                              const StragglerResult& stragglers);
};

}  // namespace ncclwatch::analysis

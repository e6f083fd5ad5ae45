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
// comes first when the straggler costs less than the stall (both in the findings' cost unit):
// it is then named in the stall's text, as the findings order them. Utilization is graded against
// the 80-90 % that well-tuned single-node jobs sustain (multi-node jobs with heavy cross-node
// traffic run somewhat lower).
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
inline constexpr double kFlatSpreadPct = 10.0;  // per-step utilization std-dev, points

// The rows of the table above, plus the outcomes when none matches.
enum class PatternRow : uint8_t {
  kNotJudged = 0,  // no compute-kernel timing (host-only or lite-mode records)
  kHealthy,        // useful compute >= kWellTunedPct
  kNone,           // low, but none of the usual shapes
  kLagging,
  kCheckpoint,
  kDataloader,
  kCollectiveDrops,
  kFlatLow,
};
// The row's name in JSON pattern.row and the tests (the one name table; the prose is written by
// PatternReport).
const char* to_string(PatternRow row);

// The verdict and the figures behind it; PatternReport turns them into the finding's text.
struct PatternVerdict {
  PatternRow row = PatternRow::kNotJudged;
  model::Severity severity = model::Severity::kInfo;
  // Over the steady steps of the GPU-timed ranks, % of the step unless named otherwise.
  double smi_pct = 0;
  double useful_pct = 0;
  std::size_t gpu_ranks = 0;
  std::size_t rank_steps = 0;  // steady steps over those ranks (sampled ones, when sampled)
  bool multi_node = false;
  double exposed_pct = 0, exposed_wait_pct = 0, exposed_transfer_pct = 0;
  double memcpy_pct = 0;
  double idle_pct = 0, idle_before_comm_pct = 0, idle_other_pct = 0;
  double boundary_idle_pct = 0;          // dataloader/checkpoint evidence
  double comm_drop_pct = 0;              // exposed comm + idle before comm
  double kernels_per_step = 0;           // compute kernels per rank and step
  double kernel_median_us = 0;           // compute kernels, flat-low evidence
  double step_spread_pct = 0;            // std-dev of per-step utilization (points)
  double sawtooth_rank_share = 0;        // ranks that drop at the boundary in most steps, 0..1
  std::vector<std::size_t> spike_steps;  // checkpoint: 1-based step numbers
  std::size_t period_steps = 0;
  double spike_idle_ns = 0, other_idle_ns = 0;  // checkpoint: boundary idle per spike/other step
  int64_t stall_ns = 0;                         // a job-wide stall per affected step
  double stall_cost_pct = 0;                    // ... its cost (the findings' unit)
  // The front straggler is the stall's uneven tail: a side note of the stall's row, not `lagging`.
  bool straggler_is_side_note = false;
  // The finding's cost (docs/verdicts.md, "Figures"): the share of the job's rank-time the row's
  // shape takes (lagging: its straggler's cost; dataloader: the boundary idle; checkpoint: the
  // spike steps' idle beyond the others'; collective-drops: exposed comm and idle before it;
  // flat-low: the idle between kernels; none: everything but compute), over mean_step_ns.
  double cost_pct = 0;
  double mean_step_ns = 0;

  static PatternVerdict judge(const model::JobTrace& job, const std::vector<RankBreakdown>& ranks,
                              const StragglerResult& stragglers);
};

}  // namespace ncclwatch::analysis

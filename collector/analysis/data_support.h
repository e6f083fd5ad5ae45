// What the recorded data can support (docs/verdicts.md, "Confidence gates"). A verdict is drawn
// only from data that supports it; where the data cannot, the report says what is missing
// instead of judging:
//   - compute kernels left out on purpose (NCCLWATCH_KERNELS=nccl | sampled:N, trace header):
//     utilization and overlap come from the steps inside the windows where compute was
//     recorded, or are not judged;
//   - a rank that lost much of its trace by accident (ring full, CUPTI drops, ring holes):
//     its verdicts, and the job-wide ones it takes part in, are information, naming the loss;
//   - one rank alone (no collective matched across 2+ traced ranks): no cross-rank claim
//     (nobody's waiting for peers, lateness or straggling can be measured).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/interval_set.h"
#include "analysis/straggler_verdict.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::analysis {

// A rank that lost this share of its records or more is judged at info level only.
inline constexpr double kHeavyLossShare = 0.20;

struct RankSupport {
  // Compute kernels are in the trace only inside these windows (rank clock); none: everywhere.
  std::optional<IntervalSet> compute_windows;
  double loss_share = 0;   // records lost by accident / (records kept + lost)
  std::string loss_words;  // "ring full 2,992 records, CUPTI dropped 10 records" (empty: none)
};

struct DataSupport {
  std::vector<RankSupport> ranks;  // per JobTrace::ranks index
  // Some collective instance was matched across 2+ traced ranks: waiting for peers, lateness
  // and stragglers can be measured.
  bool cross_rank = false;
  bool any_instance = false;       // some collective or send/recv was matched at all
  std::vector<std::size_t> lossy;  // rank indices with loss_share >= kHeavyLossShare
  // "NCCLWATCH_KERNELS=sampled:4 on 4 of 4 ranks" (empty: every compute kernel recorded).
  std::string kernel_scope;
  bool any_sampled = false;

  // Each rank's compute windows come from its digest when its GPU records were dropped
  // (analysis/rank_digest.h).
  static DataSupport of(const model::JobTrace& job, const model::MatchResult& match);
  // Where `rank`'s compute kernels were recorded (RankSupport::compute_windows).
  static std::optional<IntervalSet> compute_windows_of(const model::RankTrace& rank);

  // "rank 2 lost 95% of its records (ring full 2,992 records)"; several ranks in one phrase
  // (empty: no rank lost heavily).
  std::string lossy_note;

  bool lossy_rank(std::size_t rank_index) const;
  // " — information only: <lossy_note>": what a verdict that rests on lost records says.
  std::string unsupported_by_losses() const;
  // Stragglers on lossy ranks: information, naming the loss (Straggler::unsupported).
  void gate(std::vector<Straggler>& stragglers) const;
};

}  // namespace ncclwatch::analysis

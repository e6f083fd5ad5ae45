// The run's history (docs/always-on.md, "The report of a long run"): every rank's step summaries
// (format.h, StepRecord) read in step order, all ranks together, one step at a time, folded into
// at most HistoryOptions::max_periods periods (neighbouring periods merge pairwise as the run
// grows), so memory depends on the number of ranks, never on the run's length. What the periods
// show: step time and its breakdown over time, ranks late at the step's first collective (with
// the straggler analysis' cause names), regressions of the step time with their start.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/straggler_verdict.h"
#include "ncclwatch/format.h"

namespace ncclwatch::history {

// One rank of the job (global-rank order, as JobTrace::ranks) and where its summaries are.
struct RankSource {
  int32_t rank = -1;  // global rank (-1 unknown)
  std::string host;
  std::vector<std::string> parts;  // trace files holding its step summaries, oldest first
  int64_t wall_offset_ns = 0;      // CLOCK_REALTIME - CLOCK_MONOTONIC of its host
};

// One rank's step summaries in the order written (a trace file: step_stream.h; tests: memory).
// A GpuTimingRecord that says how GPU timing runs outside capture windows (reason auto or
// setting), as opposed to a window's own switch: the first one is the rank's decision.
inline bool is_gpu_decision(const format::GpuTimingRecord& g) {
  return g.prefix.u8b != static_cast<uint8_t>(format::GpuTimingReason::kWindow);
}

class StepSource {
 public:
  virtual ~StepSource() = default;
  // The next summary; false at the end.
  virtual bool next(format::StepRecord& out) = 0;
  // Why GPU timing ran only inside capture windows, or stayed on (NCCLWATCH_SUMMARY_GPU): the
  // first GpuTimingRecord of reason auto or setting read so far; nullptr: none.
  virtual const format::GpuTimingRecord* gpu_decision() const { return nullptr; }
};

// How GPU timing ran outside capture windows (NCCLWATCH_SUMMARY_GPU), from the first rank that
// wrote a decision.
struct GpuSwitchInfo {
  bool known = false;         // a rank wrote one (else: GPU timing throughout, or none)
  bool windows_only = false;  // off outside windows: steps there have no GPU figures
  bool automatic = false;     // the auto decision (else NCCLWATCH_SUMMARY_GPU=off)
  bool lite = false;          // units are NCCL calls (lite mode), else kernels
  double units_per_step = 0, unit_cost_us = 0, step_ms = 0, cost_pct = 0;
  std::size_t ranks = 0;  // ranks that wrote a decision
};

// One rank over a period: means over the steps it summarized there.
struct RankPeriod {
  float late_ms = 0;      // arrival at the step's first collective minus the median arrival
  float compute_ms = -1;  // -1: unknown (no GPU timing)
  float idle_ms = -1;
  uint32_t steps = 0;       // steps of the period this rank summarized
  uint32_t late_steps = 0;  // of which with a known arrival (lateness measured)
};

// Consecutive steps. Figures are means over the period's steps of each step's median over its
// ranks; -1 where unknown. The four parts split the step: compute, communication not hidden
// behind compute (exposed_ms, the waiting for peers taken out), waiting for peers, idle.
struct Period {
  uint64_t first_step = 0, last_step = 0, steps = 0;
  int64_t start_wall_ns = 0, end_wall_ns = 0;  // CLOCK_REALTIME
  double step_ms = 0;
  double compute_ms = -1, exposed_ms = -1, wait_ms = -1, idle_ms = -1;
  double calls = 0, bytes = 0;  // per rank and step
  // Steps inside a capture window (some rank's summary flagged kStepDetail): full detail was
  // kept there, which costs the job time of its own (CUPTI's launch records, more to disk).
  uint64_t detail_steps = 0;
  std::vector<RankPeriod> ranks;  // per index into History::ranks
};

// The step time above the run's usual level over consecutive periods.
struct Regression {
  std::size_t first_period = 0, last_period = 0;
  uint64_t first_step = 0, last_step = 0;
  int64_t start_wall_ns = 0, end_wall_ns = 0;
  double baseline_ms = 0, step_ms = 0;
  // The part of the step that grew most against the baseline periods ("waiting for peers") and
  // by how much; "" when no breakdown is known.
  std::string grew;
  double grew_ms = 0;
  bool until_end = false;
  std::size_t late_rank = SIZE_MAX;  // index into History::slow_ranks of a rank late meanwhile
};

// A rank late at the first collective over consecutive periods.
struct SlowRank {
  std::size_t rank = 0;  // index into History::ranks
  std::size_t first_period = 0, last_period = 0;
  uint64_t first_step = 0, last_step = 0;
  int64_t start_wall_ns = 0, end_wall_ns = 0;
  double late_ms = 0;                                  // mean lateness over the span
  double step_ms = 0;                                  // the job's mean step time over the span
  double compute_excess_ms = -1, idle_excess_ms = -1;  // against its peers' median (-1 unknown)
  analysis::Cause cause = analysis::Cause::kUnknown;
};

struct History {
  std::vector<RankSource> ranks;
  uint64_t steps = 0;  // steps joined across ranks
  uint64_t first_step = 0, last_step = 0;
  int64_t start_wall_ns = 0, end_wall_ns = 0;
  format::StepSource source = format::StepSource::kCollectives;
  format::StepTiming timing = format::StepTiming::kNone;
  GpuSwitchInfo gpu_switch;
  bool clocks_from_sync = false;  // hosts aligned by the first collective's common GPU end
  uint64_t out_of_order = 0;      // summaries skipped: a step number a rank had passed already
  std::vector<Period> periods;
  std::vector<Regression> regressions;
  std::vector<SlowRank> slow_ranks;  // by start, then rank
};

struct HistoryOptions {
  std::size_t max_periods = 400;
};

// Reads every source to its end, step by step (the smallest step number any rank has next, all
// ranks holding it together), and folds what it reads. `sources[i]` belongs to `ranks[i]`.
History build_history(std::vector<RankSource> ranks,
                      std::vector<std::unique_ptr<StepSource>>& sources,
                      const HistoryOptions& options = {});

// The same, reading each rank's parts (step_stream.h); unreadable files become `problems`.
History build_history(std::vector<RankSource> ranks, std::vector<std::string>& problems,
                      const HistoryOptions& options = {});

}  // namespace ncclwatch::history

// What the history's periods show: regressions of the step time (with their start and the part of
// the step that grew) and ranks late at the first collective over a span of the run (with the
// straggler analysis' cause names, from the rank's GPU figures against its peers').
#pragma once

#include <vector>

#include "history/history.h"

namespace ncclwatch::history {

// A regression: consecutive periods (never the first one: warm-up) whose step time is more than
// kRegressionRatio above the run's usual level (the lower quartile of the periods' step times, so
// a slow half of the run does not become the norm), covering at least kMinRegressionSteps steps
// and two periods, or one period at the run's end. Periods mostly inside capture windows are
// neither (captured_periods): full detail slows a job by itself -- on a launch-bound job CUPTI's
// per-kernel cost made the first-50-steps window +30 % on an H200 -- so a window is no regression
// of the job, and no part of its baseline either.
inline constexpr double kRegressionRatio = 1.10;
inline constexpr uint64_t kMinRegressionSteps = 10;
std::vector<Regression> find_regressions(const std::vector<Period>& periods);
// Per period: at least half its steps inside a capture window, while the run also has periods
// mostly outside windows (a whole-run window, NCCLWATCH_DETAIL=all, captures nothing apart).
std::vector<bool> captured_periods(const std::vector<Period>& periods);

// A late rank in a period: late by at least kLateShare of the step (and kLateFloorMs) and by
// kLateOverPeers times its peers' typical (median absolute) lateness (with one peer, the share
// alone). Consecutive periods of one
// rank are one span (across pauses shorter than kMaxSlowGap periods), kept when it covers at least
// kMinSlowSteps steps. Cause: its compute above its peers' median by at least half its lateness
// (gpu-slow), else its GPU idle above theirs likewise (host-stall: the GPU waited for the host),
// else unknown (also without GPU timing).
inline constexpr double kLateShare = 0.02;
inline constexpr uint64_t kMinSlowSteps = 5;   // a span of fewer steps is noise, not a slow rank
inline constexpr std::size_t kMaxSlowGap = 2;  // periods not late inside one span, at most
inline constexpr double kLateFloorMs = 0.05;
inline constexpr double kLateOverPeers = 3.0;
// Each regression's late rank: the span of h.slow_ranks that overlaps it most (if any).
void link_regressions(History& h);

std::vector<SlowRank> find_slow_ranks(const std::vector<Period>& periods,
                                      format::StepTiming timing);

}  // namespace ncclwatch::history

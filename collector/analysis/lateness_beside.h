// Per-step lateness against references that leave known stragglers out.
//
// ArrivalStats measures each rank's lateness against each collective's median arrival over all
// its members. With few ranks a persistent straggler moves that median whenever another rank is
// late too: with 4 ranks the median is the mean of the 2nd and 3rd arrivals, so in the steps
// where a second rank stalls by S next to a straggler late by L >= S, the median sits at S/2 and
// the stall looks half as large (with 3 ranks it vanishes). Once the persistent stragglers are
// known, the verdict measures the other ranks again against the median of the members that are
// not stragglers (straggler_verdict.cpp, "beside the persistent ones").
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/arrivals.h"
#include "analysis/overlap.h"
#include "model/match_result.h"

namespace ncclwatch::analysis {

// Per rank index, per step of its plan (RankOverlap::plan): its worst lateness in the step
// against each used instance's median arrival over the members whose rank is not `excluded`
// (all members when every one is), INT64_MIN where it has no instance in that step — the
// counterpart of RankArrivalStats::step_lateness_ns. `workers`: threads over chunks of
// instances for the medians (the result does not depend on it).
std::vector<std::vector<int64_t>> step_lateness_beside(const model::MatchResult& match,
                                                       const Arrivals& arrivals,
                                                       const std::vector<RankOverlap>& overlaps,
                                                       const std::vector<bool>& excluded,
                                                       unsigned workers = 1);

}  // namespace ncclwatch::analysis

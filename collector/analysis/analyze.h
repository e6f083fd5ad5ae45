// The analyses' one entry point: the collector's pipeline calls analyze() after matching and
// clock alignment. It appends findings (stragglers, then overlap), the "Stragglers" and
// "Overlap" sections, and JSON overlap[], stragglers[], buckets[], overlap_analysis,
// straggler_analysis. Timestamps compared across ranks go through clocks.at(rank_index).
#pragma once

#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"
#include "model/report.h"

namespace ncclwatch::analysis {

// `threads`: workers for the per-rank and per-instance passes (0: one per core, as
// trace::worker_count). The report is the same, byte for byte, whatever the count: every pass
// writes its own slots and partial results are combined in a fixed order.
void analyze(const model::JobTrace& job, const model::MatchResult& match,
             const model::ClockAlignment& clocks, model::Report& report, unsigned threads = 1);

}  // namespace ncclwatch::analysis

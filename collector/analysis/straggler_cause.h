// Causes of the stragglers the verdict named (straggler_verdict.cpp's last steps): GPU figures
// against a baseline (gpu-slow, host-stall), run-queue wait from the shim's scheduling samples
// (cpu-contention, cpu_wait.h), transfer times (network), slow links.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/arrivals.h"
#include "analysis/overlap.h"
#include "analysis/straggler_verdict.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::analysis {

// Sets cause and evidence of every straggler in `out`. `persistent[r]`: rank index r is a
// persistent straggler (left out of the healthy peers' baseline).
void attribute_causes(const model::JobTrace& job, const model::MatchResult& match,
                      const model::ClockAlignment& clocks, const Arrivals& arrivals,
                      const std::vector<RankOverlap>& overlaps, const std::vector<bool>& persistent,
                      StragglerResult& out);

// The ranks whose collectives cross one of `out.links` (members of its communicators) are
// behind that link; those named as stragglers move to it, unless their compute is slower than
// their peers' (measured directly: no link explains it). A rank behind a slow transfer is no
// straggler. Node problems left without stragglers go too. The link's cost is the wait its
// ranks inflicted (`steady_inflicted`, per rank index; `window_sum`: the job's rank-time);
// late_ranks are those that inflicted >= `late_ns` per steady step. Returns the inflicted
// wait of every rank behind a link, summed.
double attribute_to_links(const model::JobTrace& job, const std::vector<std::size_t>& active,
                          const std::vector<int64_t>& steady_inflicted, double late_ns,
                          double window_sum, StragglerResult& out);

}  // namespace ncclwatch::analysis

// Clock alignment across hosts. Base: each host's NTP-synced wall clock (the trace's clock
// anchors). Refinement: a matched collective ends at nearly the same instant on every rank, so
// the difference of its end times between two hosts measures their clock offset: the GPU kernel
// end where both sides have one, else the host exit of the call (a blocking call returns when the
// last rank arrives). Medians with MAD outlier rejection; an offset is changed only where at
// least `min_samples` instances support it, otherwise the host stays on its wall clock.
#pragma once

#include <cstdint>

#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::clock {

struct ClockOptions {
  uint64_t min_samples = 3;
  // Instances looked at, at most (evenly spread over the run): a median needs no million samples.
  uint64_t max_instances = 10000;
};

// Offsets put every rank on the clock of the reference host (the host of JobTrace::ranks[0]).
model::ClockAlignment align_clocks(const model::JobTrace& job, const model::MatchResult& match,
                                   const ClockOptions& options = {});

}  // namespace ncclwatch::clock

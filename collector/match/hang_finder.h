// The hang verdict (model/hang_verdict.h) from the ranks' entry evidence (calls entered and never
// returned) and, for traces without it, from the last incomplete instance of each comm.
#pragma once

#include "model/hang_verdict.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::match {

model::HangVerdict find_hang(const model::JobTrace& job, const model::MatchResult& match);

// "1.5 KiB", "4.0 MiB": sizes in verdict lines.
std::string format_bytes(uint64_t bytes);

}  // namespace ncclwatch::match

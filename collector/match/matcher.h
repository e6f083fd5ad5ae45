// Matching: every collective instance lined up across the ranks of its comm by (comm id, seq),
// every send paired with its recv by (comm, sender, receiver, per-peer seq); desyncs, instances
// some ranks never entered (the hang signature) and comms whose members disagree on size.
#pragma once

#include <cstdint>

#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::match {

struct MatchOptions {
  // Lists stay short for people; the CommSummary counters keep the full totals.
  uint32_t max_desyncs_per_comm = 64;
  // Runs of incomplete instances kept per comm: the first few and the most recent (the hang).
  uint32_t max_incomplete_runs_per_comm = 64;
};

model::MatchResult match_job(const model::JobTrace& job, const MatchOptions& options = {});

}  // namespace ncclwatch::match

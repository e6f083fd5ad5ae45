// The matchers for one comm (internal to ncclwatch_match; match_job drives them).
#pragma once

#include "match/comm_directory.h"
#include "match/matcher.h"

namespace ncclwatch::match {

// Collectives of one comm by seq, through a dense seq-indexed window (no hash per record).
void match_collectives(const model::JobTrace& job, const CommEntry& comm,
                       const MatchOptions& options, model::CommSummary& summary,
                       model::MatchResult& out);

// Sends and recvs of one comm by (sender, receiver, per-peer seq).
void match_p2p(const model::JobTrace& job, const CommEntry& comm, const MatchOptions& options,
               model::CommSummary& summary, model::MatchResult& out);

}  // namespace ncclwatch::match

// Who is in which communicator, and each member's calls on it: the index the matchers walk.
// Built in one pass over every rank's calls (one hash lookup per change of comm, not per call).
#pragma once

#include <cstdint>
#include <vector>

#include "model/job_trace.h"

namespace ncclwatch::match {

struct CommMember {
  uint32_t rank_index = 0;   // index into JobTrace::ranks
  int32_t global_rank = -1;  // RankInfo::rank
  int32_t comm_rank = -1;    // rank inside the comm (CommInfo), -1 when the comm record is missing
  int32_t reported_nranks = 0;  // size this member's CommInfo reports, 0 when missing
  std::vector<uint32_t> colls;  // indices into that rank's calls: collectives, sorted by seq
  std::vector<uint32_t> p2p;    // indices into that rank's calls: send/recv, in call order
};

struct CommEntry {
  uint64_t id = 0;
  std::vector<CommMember> members;  // sorted by comm rank (unknown last), then global rank
};

// Comms sorted by member count (largest first, so the world comm leads), then id. Calls with
// comm id 0 or a func that is neither collective nor send/recv are not indexed.
std::vector<CommEntry> build_comm_directory(const model::JobTrace& job);

}  // namespace ncclwatch::match

// Collective instances matched across ranks. Produced by collector/match, consumed by the
// analyses and the report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::model {

// One rank's part in an instance.
struct InstanceMember {
  uint32_t rank_index = 0;  // index into JobTrace::ranks
  uint32_t call_index = 0;  // index into that rank's calls
};

// One collective (or one send/recv pair) matched by (comm, seq) across the ranks of its comm.
struct CollectiveInstance {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  format::Func func = format::Func::kUnknown;
  uint64_t bytes = 0;          // bytes of the first member's call
  uint32_t first_member = 0;   // members[first_member .. first_member + nmembers)
  uint32_t nmembers = 0;
  uint32_t expected = 0;       // comm size
};

struct IncompleteInstance {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  format::Func func = format::Func::kUnknown;
  std::vector<int32_t> present_ranks;  // global ranks that entered
  std::vector<int32_t> missing_ranks;  // global ranks that never entered
};

struct Desync {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  std::vector<int32_t> ranks;  // global ranks that disagree with the majority
  std::string what;            // "count 1024 vs 2048", "op all_gather vs all_reduce", ...
};

struct CommSummary {
  uint64_t id = 0;
  int32_t nranks = 0;                // size the members agree on (majority)
  std::vector<int32_t> ranks;        // global ranks seen in it, ordered by comm rank
  bool size_disagreement = false;    // members report different nranks
  uint64_t instances = 0;
};

struct MatchResult {
  std::vector<CollectiveInstance> instances;  // complete instances, per comm in seq order
  std::vector<InstanceMember> members;
  std::vector<IncompleteInstance> incomplete;
  std::vector<Desync> desyncs;
  std::vector<CommSummary> comms;
};

}  // namespace ncclwatch::model

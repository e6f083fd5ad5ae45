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
  uint64_t bytes = 0;         // bytes of the first member's call
  uint32_t first_member = 0;  // members[first_member .. first_member + nmembers)
  uint32_t nmembers = 0;
  uint32_t expected = 0;  // comm size
};

// A run of consecutive instances with the same ranks missing (one entry, not thousands): seq ..
// seq_last, `count` instances. For send/recv, func is kSend/kRecv and the present rank is the side
// whose call has no partner.
struct IncompleteInstance {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  uint64_t seq_last = 0;
  uint64_t count = 1;
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
  int32_t nranks = 0;              // size the members agree on (majority)
  std::vector<int32_t> ranks;      // global ranks seen in it, ordered by comm rank
  bool size_disagreement = false;  // members report different nranks
  uint64_t instances = 0;          // complete instances
  uint64_t incomplete = 0;         // instances some traced member never entered
  uint64_t desyncs = 0;            // instances whose members disagree (all, even past the list cap)
  uint64_t duplicate_seqs = 0;     // calls that reused a seq already seen on the same rank
  int32_t untraced = 0;            // members counted in nranks with no trace at all
};

struct MatchResult {
  // Complete instances: each comm's collectives in seq order, then its send/recv pairs
  // (func kSend, members [sender, receiver]). An instance is complete when every traced member
  // of the comm entered it (members with no trace at all are counted in CommSummary::untraced).
  std::vector<CollectiveInstance> instances;
  std::vector<InstanceMember> members;
  std::vector<IncompleteInstance> incomplete;
  std::vector<Desync> desyncs;
  std::vector<CommSummary> comms;
};

}  // namespace ncclwatch::model

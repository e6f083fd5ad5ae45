// What `ncclwatch status` shows: per rank, the calls it is inside now; per comm, the highest
// sequence number each rank entered and returned from, and who is behind.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/losses.h"
#include "ncclwatch/format.h"

namespace ncclwatch::live {

// A hooked call entered and not (yet) returned.
struct OpenCall {
  format::Func func = format::Func::kUnknown;
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  bool has_seq = false;
  int64_t enter_ns = 0;
  int64_t age_ns = 0;  // until now (live segment) or until last seen (trace file)
  uint32_t tid = 0;
};

// One rank's progress on one comm. Sequence numbers are the collectives' (0-based, as in the
// report); -1 = none yet.
struct CommProgress {
  format::Func entered_func = format::Func::kUnknown;
  int64_t entered = -1;
  int64_t returned = -1;
  int32_t comm_rank = -1;
  int32_t nranks = 0;
};

struct RankStatus {
  int32_t rank = -1;
  std::string host;
  int64_t pid = 0;
  bool live = false;                 // segment on this node, owner alive
  bool from_segment = false;         // seen in /dev/shm on this node
  bool from_trace = false;           // trace file in the directory
  bool trace_closed = false;         // its trace file says the process finished writing
  std::string note;                  // why a source was not used, if any
  std::string trace_path;            // the trace file its segment names (this node's ranks)
  std::vector<OpenCall> open_calls;  // oldest first
  std::map<uint64_t, CommProgress> comms;
  format::Func last_func = format::Func::kUnknown;  // last call returned
  int64_t last_return_ns = 0;
  int64_t idle_ns = -1;  // since the last call returned, while not inside one (-1 unknown)
  model::Losses losses;  // counted so far (segment, else the trace file's header)
};

struct CommStatus {
  uint64_t id = 0;
  int32_t nranks = 0;                              // from the members' comm records (largest seen)
  int64_t max_entered = -1;                        // highest seq any rank entered
  format::Func max_func = format::Func::kUnknown;  // its op
  std::vector<int32_t> in_init;  // ranks inside the init of this comm (not created yet)
  struct Member {
    int32_t rank = -1;
    int64_t entered = -1;
    int64_t returned = -1;
    int64_t behind = 0;  // max_entered - entered
  };
  std::vector<Member> members;   // ranks with a trace or segment, by rank
  std::vector<int32_t> waiting;  // inside max_entered now
  std::vector<int32_t> behind;   // entered < max_entered
  int32_t unseen = 0;            // members counted in nranks with nothing on this view
};

struct JobStatus {
  std::string job;
  int64_t now_ns = 0;  // host clock of this node when read
  int64_t now_wall_ns = 0;
  std::vector<RankStatus> ranks;  // by rank (unknown last)
  std::vector<CommStatus> comms;
  std::vector<std::string> notes;  // inputs skipped and why
};

}  // namespace ncclwatch::live

// The hang verdict: where a job stopped, who waits there and who never came. Produced by
// collector/match (HangFinder), rendered first by the report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::model {

// What a rank that never entered the stuck call was last doing.
struct MissingRankState {
  int32_t rank = -1;
  bool has_trace = false;          // false: no trace of this rank at all
  bool waiting_elsewhere = false;  // it is itself inside another NCCL call that never returned
  format::Func func = format::Func::kUnknown;  // that call, or its last returned call
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  bool has_seq = false;
  int64_t call_end_ns = 0;    // last call's return (or, waiting elsewhere, its entry)
  int64_t idle_ns = -1;       // no NCCL call for this long before it was last seen alive
  bool process_dead = false;  // trace salvaged or cut short: died or was killed
  int64_t wall_offset_ns = 0;
};

struct HangVerdict {
  bool hung = false;
  // Where the job stopped. For an init hang func is the init call and seq is not meaningful.
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  bool has_seq = false;
  format::Func func = format::Func::kUnknown;
  format::Func via = format::Func::kUnknown;  // kGroupEnd when the ranks wait in ncclGroupEnd
  uint64_t bytes = 0;
  int32_t comm_size = 0;
  std::vector<int32_t> waiting_ranks;  // entered and never returned (or, without entry
                                       // evidence, entered the last incomplete instance)
  std::vector<int32_t> missing_ranks;  // never entered it
  bool waiting_from_entry_evidence = true;
  int64_t since_ns = 0;       // earliest entry of a waiting rank (its host clock)
  int64_t since_wall_ns = 0;  // the same on wall time (realtime), 0 if unknown
  int64_t waited_ns = 0;      // longest wait seen (entry to last seen in flight)
  std::vector<MissingRankState> last_call_of_missing;
  // Waiting ranks whose NCCL kernel for the stuck call was launched and never finished (CUPTI:
  // launch seen, no activity record).
  std::vector<int32_t> kernel_never_finished;
  std::vector<int32_t> dead_ranks;  // ranks whose process died or was killed (any)
  std::string text;                 // the one-line verdict
};

}  // namespace ncclwatch::model

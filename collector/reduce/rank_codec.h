// One rank as a node file holds it (collector/reduce/node_file.h): the RankTrace that the
// report's lean load keeps (pipeline/lean_load.h: calls, comms, ranges, the small records, the
// GPU records' digest and what the collector's checks take from them), the problems its read
// raised, and which trace it came from. Encoded without loss (calls: call_codec.h): a report
// from node files is the report from the traces, byte for byte (tests/collector/reduce,
// tests/scenarios), unless compute times were put on a grid (compute_resolution_ns: the same
// verdicts, GPU-time figures within about a grid step a kernel).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/job_trace.h"
#include "model/rank_trace.h"

namespace ncclwatch::reduce {

// The trace a rank was reduced from, by what `report` can check again without reading it: the
// file names of its parts in the trace directory, the process that wrote it and its records.
struct TraceIdentity {
  std::vector<std::string> parts;  // base names, in part order
  int64_t pid = 0;
  int64_t start_monotonic_ns = 0;
  int64_t start_realtime_ns = 0;
  uint64_t records = 0;  // whole records in all parts when reduced

  bool operator==(const TraceIdentity&) const = default;
};

struct NodeRank {
  TraceIdentity trace;
  model::RankTrace rank;  // digested: GPU records dropped, `digest` and `dropped` set
  std::vector<model::InputProblem> problems;
  // The grid the digest's compute spans were rounded to (ReduceOptions); 1: exact.
  int64_t compute_resolution_ns = 1;
};

// Paths in the rank (its source, its problems' sources) are written relative to `dir` when they
// are in it, and read back under the reader's `dir`: a node file moves with its directory.
std::string encode_rank(const NodeRank& rank, const std::string& dir);
// false with `error` set when the bytes are not a whole, valid rank (nothing of it is used).
bool decode_rank(std::string_view bytes, const std::string& dir, NodeRank& out, std::string& error);

}  // namespace ncclwatch::reduce

// `ncclwatch reduce DIR`: one node's rank traces -> its node file (node_file.h), run where the
// traces are (one task per node: srun --ntasks-per-node=1, mpirun -npernode 1; docs/multi-node.md).
// Each rank is read, its GPU records linked, digested and dropped as the report's lean load does
// (pipeline/lean_load.h), and what is left is written. Ranks with capture windows are left to
// their traces: a windowed report cuts each window out of the records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/job_trace.h"
#include "trace/job_loader.h"

namespace ncclwatch::reduce {

struct ReduceOptions {
  std::string job;         // "" = the job with the most ranks, as `report` chooses
  std::string host;        // whose ranks (ProcessInfo::host, as the traces say)
  bool all_hosts = false;  // every host in the directory, one node file each
  unsigned threads = 0;    // 0: one per core
  // > 1: each compute span's edges rounded to this grid (digest_codec.h), which takes about a
  // byte of its ~5 where kernels run apart, as in real traces. Lossy: the report's GPU-time
  // figures (overlap, breakdown, the utilization curve) can move by about this much a kernel
  // gap; the verdicts stay (tests/collector/reduce). 1: exact, the traces' report byte for byte.
  int64_t compute_resolution_ns = 1;
};

struct ReducedNode {
  std::string host;
  std::string path;       // the node file written ("" when none was: nothing to reduce)
  std::size_t ranks = 0;  // ranks in it
  std::vector<std::string> left_to_traces;  // trace files of ranks with capture windows
  uint64_t records = 0;                     // trace records read
  uint64_t trace_bytes = 0;                 // the sizes of the trace files reduced
  uint64_t node_bytes = 0;

  // The node file's size as a share of the traces it was reduced from (0 without traces).
  double percent_of_traces() const {
    return trace_bytes ? 100.0 * static_cast<double>(node_bytes) / static_cast<double>(trace_bytes)
                       : 0.0;
  }
};

struct ReduceResult {
  std::string job;
  std::vector<ReducedNode> nodes;
  std::vector<model::InputProblem> problems;  // the traces' (as `report` would list them)
  std::string error;                          // nothing was written: why
};

ReduceResult reduce_directory(const std::string& dir, const ReduceOptions& options);
// The same from the directory's index of options.job (trace::index_job, made once by a caller
// that also asks host_in_job: one read of every trace's header, not two).
ReduceResult reduce_index(const std::string& dir, trace::JobIndex index,
                          const ReduceOptions& options);

// Job `job`'s ranks ("": the job with the most ranks) in `dir` as `host` sees them, from the
// traces' headers alone. `ncclwatch run` reduces its node's ranks when the job spans hosts and
// none of the node's ranks is still running (one `ncclwatch run` per rank: the last one does it).
struct HostInJob {
  std::size_t ranks = 0;    // traces of `host`
  std::size_t running = 0;  // of them, still being written (state open)
  // Not all of the job is on `host`, which has some of it: traces of another host are there (a
  // shared directory), or a rank's launcher gave a world larger than the host's ranks (each node
  // writes a directory of its own).
  bool spans_hosts = false;
};
HostInJob host_in_job(const std::string& dir, const std::string& job, const std::string& host);
HostInJob host_in_job(const trace::JobIndex& index, const std::string& host);

// The host name the shim records for this machine: NCCLWATCH_HOST if set (read at start, before
// any thread), else gethostname.
std::string this_host();

}  // namespace ncclwatch::reduce

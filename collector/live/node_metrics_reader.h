// The exporter's reader: this node's ranks, read live and incrementally. Each poll lists this
// node's shared-memory segments (mapped read-only: identity, mode, drop counters and the calls in
// flight now, never the ring positions the writers use), then reads only what was appended to the
// ranks' trace files since the last poll (a cursor per file), a bounded chunk per file in turn so
// that ranks advance together for the node matcher. Memory is bounded by the number of ranks and
// the join tables, not by the length of the job; a rank whose process has ended and whose trace
// was closed is forgotten `forget_after_s` later.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "live/node_collective_matcher.h"
#include "live/rank_metrics.h"

namespace ncclwatch::live {

struct ExporterOptions {
  std::string job;   // empty: every job found on this node
  std::string dir;   // also read the traces in DIR that this node's host wrote (finished ranks)
  std::string host;  // this node's host name as the shim records it (for --dir); empty: gethostname
  std::string shm_dir = "/dev/shm";
  double forget_after_s = 600;
  int64_t gpu_lag_ns = 1'500'000'000;
  std::size_t chunk_records = 1024;
};

struct NodeSnapshot {
  int64_t now_ns = 0;
  std::vector<RankMetrics> ranks;  // by job, then rank
  std::vector<std::string> notes;  // inputs skipped on the last poll, and why
  // The reader's own bookkeeping, exported so that its limits are visible.
  uint64_t polls = 0;
  uint64_t late_gpu_intervals = 0;
  uint64_t unlinked_records = 0;
  uint64_t node_matched = 0, node_partial = 0, node_unmatched = 0;
};

class NodeMetricsReader {
 public:
  explicit NodeMetricsReader(ExporterOptions options);
  ~NodeMetricsReader();
  NodeMetricsReader(const NodeMetricsReader&) = delete;
  NodeMetricsReader& operator=(const NodeMetricsReader&) = delete;

  // Reads what is new; returns the state after it.
  NodeSnapshot poll();
  // Ranks tracked now (for the memory bound test).
  std::size_t tracked_ranks() const { return ranks_.size(); }

 private:
  struct Rank;
  // The steps of a poll, in order.
  Rank& rank_for(const format::ProcessInfo& process);
  void read_segments(NodeSnapshot& snap);
  std::vector<Rank*> open_traces(NodeSnapshot& snap);
  void read_new_records(std::vector<Rank*>& active);
  void update_gauges(Rank& rank, int64_t now_ns);
  void sweep_ranks(NodeSnapshot& snap);
  void add_matcher_counts(NodeSnapshot& snap);

  ExporterOptions options_;
  std::map<std::pair<std::string, int64_t>, std::unique_ptr<Rank>> ranks_;  // (host, pid)
  std::map<std::string, std::unique_ptr<NodeCollectiveMatcher>> matchers_;  // per job
  // Counts of forgotten ranks and jobs, kept so that the exporter's counters never go down:
  // node matched, partial, unmatched, late GPU intervals, unlinked records.
  std::array<uint64_t, 5> retired_{};
  std::size_t next_member_ = 0;
  uint64_t polls_ = 0;
};

}  // namespace ncclwatch::live

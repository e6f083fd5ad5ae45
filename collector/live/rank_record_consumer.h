// Turns one rank's records, each seen once and in ring order, into its RankMetrics: calls and
// bytes by op, the GPU interval of each collective (CUPTI kernel tied to its call by the launch
// link, or lite mode's CUDA-event interval) into the histograms, the GPU timeline into busy /
// compute / exposed-communication / idle seconds, NVTX step ranges into step time. Collectives
// with a GPU interval are also handed out (take_completed) for matching across the node's ranks.
// Every join table is bounded (BoundedMap): a record whose partner never comes is forgotten.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "live/bounded_map.h"
#include "live/gpu_time_tracker.h"
#include "live/rank_metrics.h"
#include "ncclwatch/format.h"
#include "trace/seq_unwrapper.h"

namespace ncclwatch::live {

class RankRecordConsumer {
 public:
  struct Completed {
    uint64_t comm;
    uint64_t seq;
    int64_t start_ns, end_ns;
  };
  explicit RankRecordConsumer(int64_t gpu_lag_ns = 1'500'000'000);

  void add(const format::Record& record);
  // Sweeps the GPU timeline up to its lag (call after each batch of records).
  void advance() { gpu_.advance(); }
  void flush_gpu() { gpu_.flush(); }

  RankMetrics& metrics() { return m_; }
  const RankMetrics& metrics() const { return m_; }
  const GpuTimeTracker& gpu() const { return gpu_; }
  // Collectives with a GPU interval since the last call, in arrival order.
  std::vector<Completed> take_completed() { return std::exchange(completed_, {}); }
  // Comms this rank joined since the last call (for the node matcher's member counts).
  std::vector<uint64_t> take_new_comms() { return std::exchange(new_comms_, {}); }
  bool has_gpu_timeline() const { return has_kernels_; }
  // Host time of the oldest NCCL launch whose kernel CUPTI has not reported yet (0: none): with
  // real NCCL the host returns from a collective at once, so a collective stuck on the GPU shows
  // here, not among the calls in flight. Normally about a CUPTI flush period old.
  int64_t oldest_pending_launch_ns() {
    const Link* l = links_.oldest();
    return l != nullptr ? l->t_ns : 0;
  }
  uint64_t unlinked() const { return links_.evicted() + calls_.evicted() + early_gpu_.evicted(); }

 private:
  struct CallInfo {
    format::Func func;
    uint64_t bytes;
  };
  struct Link {
    uint64_t comm, seq;
    uint32_t group_id;
    uint64_t stream;
    int64_t t_ns;  // host time of the launch
  };
  struct GroupCall {
    uint64_t comm, seq, stream;
  };
  struct Interval {
    int64_t start, end;
  };
  struct PairHash {
    std::size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
      return static_cast<std::size_t>(k.first * 0x9E3779B97F4A7C15ULL ^ k.second);
    }
  };
  using CallKey = std::pair<uint64_t, uint64_t>;  // (comm, seq)

  void on_call(const format::CallRecord& c);
  void on_kernel(const format::KernelRecord& k);
  void on_gpu_interval(uint64_t comm, uint32_t seq_low, uint32_t group_id, uint64_t stream,
                       int64_t start, int64_t end);
  void gpu_done(const CallKey& key, const CallInfo& call, int64_t start, int64_t end);
  void on_string(const format::StringRecord& s);

  RankMetrics m_;
  GpuTimeTracker gpu_;
  bool has_kernels_ = false;
  bool gpu_timed_ = false;  // a collective got a GPU interval: progress is measured on the GPU
  trace::SeqUnwrapper seqs_;
  BoundedMap<uint32_t, Link> links_{65536};                  // CUPTI correlation -> call
  BoundedMap<CallKey, CallInfo, PairHash> calls_{65536};     // collectives awaiting GPU time
  BoundedMap<CallKey, Interval, PairHash> early_gpu_{4096};  // GPU time awaiting its call
  BoundedMap<uint32_t, std::vector<GroupCall>> groups_{1024};
  BoundedMap<uint32_t, std::string> partial_strings_{1024};
  BoundedMap<uint32_t, bool> step_names_{65536};  // string id -> looks like a training step
  std::vector<Completed> completed_;
  std::vector<uint64_t> new_comms_;
};

}  // namespace ncclwatch::live

// What the exporter knows about one rank: cumulative counters since the rank's first record and
// gauges as of the last poll. Fixed-size (no per-call growth): the exporter's memory does not grow
// with the length of the job.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "live/metric_schema.h"
#include "ncclwatch/format.h"

namespace ncclwatch::live {

struct GpuTimeHistogram {
  std::array<uint64_t, kBucketSlots> buckets{};  // non-cumulative counts per bucket
  uint64_t count = 0;
  double sum_s = 0;
};

struct RankMetrics {
  // Identity (labels).
  std::string job;
  std::string host;
  int32_t rank = -1;
  int32_t local_rank = -1;
  int64_t pid = 0;
  uint32_t mode = 0;  // SegmentHeader::mode: 0 host, 1 full (CUPTI), 2 lite (CUDA events)
  bool live = false;  // a segment of a running process on this node

  // Calls the rank returned from, by op.
  std::array<uint64_t, kMetricOps> calls{};
  std::array<uint64_t, kMetricOps> bytes{};
  // GPU time of each collective (kernel or CUDA-event interval), by op and size class.
  std::array<std::array<GpuTimeHistogram, kSizeClasses>, kHistogramOps> gpu_time{};

  // Collectives matched with the other ranks of this node (same comm, same seq): the fastest
  // rank's GPU time is the transfer, the rest of this rank's GPU time is waiting for peers;
  // lateness = how much later this rank's kernel started than the earliest on the node.
  uint64_t matched_collectives = 0;
  double peer_wait_s = 0;
  double transfer_s = 0;
  double lateness_s = 0;

  // GPU timeline (full and lite modes), finalized up to about a second behind the newest kernel.
  double gpu_busy_s = 0;
  double gpu_compute_s = 0;
  double gpu_exposed_comm_s = 0;
  double gpu_idle_s = 0;

  // Steps, from NVTX ranges that look like training steps ("ProfilerStep#N", "train_step").
  uint64_t steps = 0;
  double step_s = 0;
  double last_step_s = -1;  // -1: no step seen

  // Progress and hangs.
  int64_t last_collective_end_ns = 0;  // host clock of this node; 0 = none yet
  double seconds_since_last_collective = -1;
  uint32_t calls_in_flight = 0;
  double oldest_call_in_flight_s = 0;
  // Full mode: age of the oldest NCCL kernel launched and not reported complete (0: none).
  bool has_kernel_timeline = false;
  double oldest_nccl_kernel_pending_s = 0;

  // Records lost on the way: ring full (shim), CUPTI's own drops, threads without an in-flight
  // slot (shim), records this reader refused as invalid.
  uint64_t records = 0;
  uint64_t dropped = 0;
  uint64_t cupti_dropped = 0;
  uint64_t in_flight_overflow = 0;
  uint64_t invalid_records = 0;
  // Everything else the shim counted instead of recording (format::kLossFields order: lite-mode
  // untimed calls, names beyond the string table, filtered kernels, ...), as the report's `lost`.
  std::array<uint64_t, std::size(format::kLossFields)> lost{};
};

}  // namespace ncclwatch::live

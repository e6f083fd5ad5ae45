// The exporter's label scheme, in one place, so the series count is bounded by construction
// (docs/metrics.md gives the arithmetic): an op label takes one of 10 values, a size class one of
// 4, a histogram has 11 finite buckets. Nothing here depends on Prometheus.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ncclwatch/format.h"

namespace ncclwatch::live {

// Ops a call or histogram series is labelled with. Broadcast and the legacy Bcast are one op.
enum class MetricOp : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kCount,
};
inline constexpr std::size_t kMetricOps = static_cast<std::size_t>(MetricOp::kCount);

// The op of a collective or p2p call; false for everything else (groups, comm management).
constexpr bool metric_op(format::Func f, MetricOp* op) {
  using format::Func;
  switch (f) {
    case Func::kAllReduce:
      *op = MetricOp::kAllReduce;
      return true;
    case Func::kBroadcast:
    case Func::kBcast:
      *op = MetricOp::kBroadcast;
      return true;
    case Func::kReduce:
      *op = MetricOp::kReduce;
      return true;
    case Func::kAllGather:
      *op = MetricOp::kAllGather;
      return true;
    case Func::kReduceScatter:
      *op = MetricOp::kReduceScatter;
      return true;
    case Func::kAlltoAll:
      *op = MetricOp::kAlltoAll;
      return true;
    case Func::kGather:
      *op = MetricOp::kGather;
      return true;
    case Func::kScatter:
      *op = MetricOp::kScatter;
      return true;
    case Func::kSend:
      *op = MetricOp::kSend;
      return true;
    case Func::kRecv:
      *op = MetricOp::kRecv;
      return true;
    default:
      return false;
  }
}

// Label values: the names the report uses for the same ops.
constexpr const char* metric_op_name(MetricOp op) {
  constexpr const char* kNames[] = {"all_reduce",     "broadcast",  "reduce", "all_gather",
                                    "reduce_scatter", "all_to_all", "gather", "scatter",
                                    "send",           "recv"};
  static_assert(sizeof kNames / sizeof kNames[0] == kMetricOps);
  return kNames[static_cast<std::size_t>(op)];
}

// Size classes of the collective-time histograms: latency-bound, small, bandwidth-bound, large
// buckets (DDP's default bucket is 25 MiB).
inline constexpr std::size_t kSizeClasses = 4;
constexpr std::size_t size_class(uint64_t bytes) {
  if (bytes < (uint64_t{64} << 10)) return 0;
  if (bytes < (uint64_t{1} << 20)) return 1;
  if (bytes < (uint64_t{16} << 20)) return 2;
  return 3;
}
constexpr const char* size_class_name(std::size_t c) {
  constexpr const char* kNames[] = {"0-64KiB", "64KiB-1MiB", "1-16MiB", "16MiB+"};
  return c < kSizeClasses ? kNames[c] : "16MiB+";
}

// Upper bounds (seconds) of the histogram buckets; +Inf is implied. Roughly 3 per decade from
// 100 us (a small all-reduce on NVLink) to 10 s (a collective waiting for a stalled peer).
inline constexpr std::array<double, 11> kGpuTimeBuckets = {0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03,
                                                           0.1,    0.3,    1,     3,     10};
inline constexpr std::size_t kBucketSlots = kGpuTimeBuckets.size() + 1;  // + the +Inf bucket

constexpr std::size_t bucket_index(double seconds) {
  for (std::size_t i = 0; i < kGpuTimeBuckets.size(); ++i)
    if (seconds <= kGpuTimeBuckets[i]) return i;
  return kGpuTimeBuckets.size();
}

// Only collectives (not send/recv) get a histogram: their time is what the ranks wait in.
inline constexpr std::size_t kHistogramOps = static_cast<std::size_t>(MetricOp::kSend);

}  // namespace ncclwatch::live

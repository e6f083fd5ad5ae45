// The exporter's label scheme, in one place, so the series count is bounded by construction
// (docs/metrics.md gives the arithmetic): an op label takes one of 10 values, a size class one of
// 4, a histogram has 11 finite buckets. Nothing here depends on Prometheus.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>

#include "model/enum_table.h"
#include "model/func_names.h"
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

// The NCCL function of each op (its label value is that function's name in the report).
inline constexpr auto kMetricOpFuncs = model::enum_table<MetricOp>(
    {format::Func::kAllReduce, format::Func::kBroadcast, format::Func::kReduce,
     format::Func::kAllGather, format::Func::kReduceScatter, format::Func::kAlltoAll,
     format::Func::kGather, format::Func::kScatter, format::Func::kSend, format::Func::kRecv});

// The op of a collective or p2p call; false for everything else (groups, comm management).
constexpr bool metric_op(format::Func f, MetricOp* op) {
  if (f == format::Func::kBcast) f = format::Func::kBroadcast;  // the legacy name of the op
  for (std::size_t i = 0; i < kMetricOps; ++i) {
    if (kMetricOpFuncs[i] == f) {
      *op = static_cast<MetricOp>(i);
      return true;
    }
  }
  return false;
}

// Label values: the names the report uses for the same ops (model::func_name).
constexpr const char* metric_op_name(MetricOp op) {
  return model::func_name(kMetricOpFuncs[static_cast<std::size_t>(op)]);
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
  static_assert(std::size(kNames) == kSizeClasses, "one name per size class");
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

// Turns completed CUPTI activity buffers into format records (KernelRecord, LaunchRecord,
// NvtxRecord, StringRecord). Runs on CUPTI's buffer-completed thread (or the thread forcing
// the final flush), never on an application thread's hot path. Not thread-safe: the tracer
// serialises calls.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <memory>

#include "clock_converter.h"
#include "kernel_filter.h"
#include "string_table.h"

namespace ncclwatch::shim::gpu {

struct ConverterStats {
  uint64_t activities = 0;       // CUPTI records seen
  uint64_t emitted = 0;          // format records written (strings included)
  uint64_t filtered = 0;         // compute kernels left out by NCCLWATCH_KERNELS
  uint64_t zero_timestamps = 0;  // GPU records with start == end == 0 (CUPTI bug), dropped
  uint64_t unknown = 0;          // activity kinds we do not convert, NVTX starts lost
  uint64_t unmatched_ends = 0;   // NVTX range ends whose start preceded tracing (no loss)
};

class ActivityConverter {
 public:
  using NextRecordFn = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);
  ActivityConverter(RecordSink sink, const ClockConverter& clock, KernelFilter filter);

  // Converts every record of one completed buffer.
  void convert_buffer(NextRecordFn next, uint8_t* buffer, size_t valid_bytes) noexcept;
  void convert(const CUpti_Activity* activity) noexcept;

  const ConverterStats& stats() const noexcept { return stats_; }
  StringTable& strings() noexcept { return strings_; }

 private:
  void kernel(const CUpti_ActivityKernel10& k) noexcept;
  template <typename Copy>  // CUpti_ActivityMemcpy6 or CUpti_ActivityMemset4
  void copy_record(const Copy& m, format::ActivityKind kind) noexcept;
  void api(const CUpti_ActivityAPI& a, bool driver) noexcept;
  void marker(const CUpti_ActivityMarker2& m) noexcept;
  bool gpu_time(uint64_t start, uint64_t end, int64_t& s, int64_t& e) noexcept;
  void put(const format::Record& r) noexcept;

  // Open NVTX ranges waiting for their end marker (fixed table, keyed by CUPTI marker id).
  struct OpenRange {
    uint32_t id;
    uint32_t name_id;
    uint32_t domain_id;
    uint32_t tid;
    int64_t start_ns;
  };
  static constexpr std::size_t kOpenRanges = 1024;

  RecordSink sink_;
  const ClockConverter& clock_;
  KernelFilter filter_;
  StringTable strings_;
  std::unique_ptr<OpenRange[]> open_;
  ConverterStats stats_;
};

}  // namespace ncclwatch::shim::gpu

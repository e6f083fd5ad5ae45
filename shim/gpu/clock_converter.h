// Puts CUPTI timestamps on the shim's host clock (now_ns, CLOCK_MONOTONIC).
//
// Preferred: CUPTI calls our timestamp callback (now_ns) so every record is already on the
// host clock. Where that cannot be used (no cuptiActivityRegisterTimestampCallback, the CUDA
// 12.6u2-13.0 zero-timestamp bug, or NCCLWATCH_CUPTI_CLOCK=measured) CUPTI stamps with its
// own clock (CLOCK_REALTIME on Linux) and we subtract a measured offset. Both clocks are slewed
// alike by NTP, so the offset only moves when the realtime clock is stepped; it is re-measured
// for every completed buffer so a step corrupts at most the records of one buffer.
#pragma once

#include <atomic>
#include <cstdint>

namespace ncclwatch::shim::gpu {

class ClockConverter {
 public:
  using CuptiTimestampFn = int (*)(uint64_t*);  // cuptiGetTimestamp's shape (CUptiResult = int)

  // Timestamps arrive on the host clock already (callback registered).
  void use_host_clock() noexcept { measured_.store(false, std::memory_order_relaxed); }
  // Timestamps arrive on CUPTI's clock: measure the offset now (and on each re-measure()).
  void use_measured(CuptiTimestampFn get_timestamp) noexcept;
  void remeasure() noexcept;
  bool measured() const noexcept { return measured_.load(std::memory_order_relaxed); }
  int64_t offset_ns() const noexcept { return offset_.load(std::memory_order_relaxed); }

  int64_t to_host(uint64_t ts) const noexcept {
    return measured() ? static_cast<int64_t>(ts) - offset_ns() : static_cast<int64_t>(ts);
  }

 private:
  CuptiTimestampFn get_timestamp_ = nullptr;
  std::atomic<bool> measured_{false};
  std::atomic<int64_t> offset_{0};
};

}  // namespace ncclwatch::shim::gpu

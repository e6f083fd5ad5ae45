// CUPTI activity buffers, allocated once at start: CUPTI asks for a buffer from whatever
// thread fills one (possibly an application thread), so handing one out must not allocate or
// lock. Up to 64 buffers tracked by one atomic bitmask. When all are in use CUPTI gets none and
// drops records, which it counts (cuptiActivityGetNumDroppedRecords -> segment header).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ncclwatch::shim::gpu {

class BufferPool {
 public:
  static constexpr std::size_t kMaxBuffers = 64;
  BufferPool(std::size_t count, std::size_t bytes);

  uint8_t* acquire() noexcept;             // nullptr when every buffer is in use
  void release(uint8_t* buffer) noexcept;  // ignores pointers it does not own
  std::size_t buffer_bytes() const noexcept { return bytes_; }
  std::size_t count() const noexcept { return count_; }
  std::size_t in_use() const noexcept;

 private:
  std::size_t count_;
  std::size_t bytes_;
  std::unique_ptr<uint8_t[]> memory_;
  uint8_t* base_ = nullptr;  // 8-byte aligned start inside memory_ (CUPTI requires alignment)
  std::atomic<uint64_t> free_mask_;
};

}  // namespace ncclwatch::shim::gpu

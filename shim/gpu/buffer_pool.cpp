#include "buffer_pool.h"

#include <bit>

namespace ncclwatch::shim::gpu {

BufferPool::BufferPool(std::size_t count, std::size_t bytes)
    : count_(count == 0 ? 1 : (count > kMaxBuffers ? kMaxBuffers : count)),
      bytes_((bytes + 7) & ~std::size_t{7}),
      memory_(new uint8_t[count_ * bytes_ + 8]),
      free_mask_(count_ == 64 ? ~uint64_t{0} : ((uint64_t{1} << count_) - 1)) {
  auto addr = reinterpret_cast<uintptr_t>(memory_.get());
  base_ = memory_.get() + ((8 - (addr & 7)) & 7);
}

uint8_t* BufferPool::acquire() noexcept {
  uint64_t mask = free_mask_.load(std::memory_order_acquire);
  while (mask != 0) {
    int bit = std::countr_zero(mask);
    if (free_mask_.compare_exchange_weak(mask, mask & ~(uint64_t{1} << bit),
                                         std::memory_order_acq_rel)) {
      return base_ + static_cast<std::size_t>(bit) * bytes_;
    }
  }
  return nullptr;
}

void BufferPool::release(uint8_t* buffer) noexcept {
  if (buffer < base_ || buffer >= base_ + count_ * bytes_) return;
  auto index = static_cast<std::size_t>(buffer - base_) / bytes_;
  free_mask_.fetch_or(uint64_t{1} << index, std::memory_order_acq_rel);
}

std::size_t BufferPool::in_use() const noexcept {
  return count_ -
         static_cast<std::size_t>(std::popcount(free_mask_.load(std::memory_order_relaxed)));
}

}  // namespace ncclwatch::shim::gpu

#include "record/in_flight_table.h"

#include <atomic>

#include "ncclwatch/in_flight_slot.h"

namespace ncclwatch::shim {

format::InFlightSlot* claim_in_flight_slot(format::SegmentHeader* header, uint32_t tid) noexcept {
  if (header == nullptr || tid == 0) return nullptr;
  for (auto& slot : header->in_flight) {
    std::atomic_ref<uint32_t> owner(slot.owner_tid);
    uint32_t expected = 0;
    if (owner.load(std::memory_order_relaxed) == 0 &&
        owner.compare_exchange_strong(expected, tid, std::memory_order_acq_rel)) {
      std::atomic_ref<uint32_t>(slot.active).store(0, std::memory_order_relaxed);
      return &slot;
    }
  }
  std::atomic_ref<uint64_t>(header->losses.in_flight_overflow)
      .fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void release_in_flight_slot(format::InFlightSlot* slot) noexcept {
  if (slot == nullptr) return;
  format::in_flight_leave(*slot);
  std::atomic_ref<uint32_t>(slot->owner_tid).store(0, std::memory_order_release);
}

}  // namespace ncclwatch::shim

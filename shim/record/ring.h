// The lock-free multi-producer / single-consumer ring over a SegmentHeader and its slots, exactly
// as format.h documents it. Header-only so tests, the drain thread and salvage share one copy.
//
// Producers: claim pos by CAS on write_pos only while pos - read_pos < capacity (else count a
// drop and return: never block; a pos older than read_pos is stale and reloaded, see push()), write
// the record, publish slot.seq = pos + 1 (release). Consumer: at read_pos, slot.seq == pos + 1
// (acquire) means committed; it copies the record and advances read_pos (release) only once the
// records are safely stored, so a producer never overwrites a slot that has not been persisted.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

class Ring {
 public:
  Ring() = default;
  Ring(format::SegmentHeader* header, format::RingSlot* slots) noexcept
      : header_(header), slots_(slots), mask_(header->capacity - 1) {}

  static std::atomic_ref<uint64_t> counter(uint64_t& field) noexcept {
    return std::atomic_ref<uint64_t>(field);
  }

  format::SegmentHeader* header() const noexcept { return header_; }
  uint64_t capacity() const noexcept { return mask_ + 1; }

  // Hot path: never blocks, allocates or locks.
  //
  // The full-check compares a claimed position with read_pos, two loads of two variables. Order:
  // write_pos first (acquire, so the read_pos load below cannot be performed before it), then
  // read_pos (acquire: pairs with the consumer's release in commit(), so once a slot is seen
  // free its old record has been copied out). Two outcomes of a stale `pos` (one loaded earlier,
  // then the thread was delayed: preempted, or waiting for a contended cache line):
  //  - read <= pos: then at the moment read was loaded, write_pos >= pos (it only grows), so
  //    fill >= pos - read. "pos - read >= capacity" proves the ring was full at that moment: a
  //    true drop. "< capacity" lets us try to claim pos; the CAS fails if pos is stale, and the
  //    check is repeated with the fresh value the CAS returns.
  //  - read > pos: the consumer has already passed pos (read_pos never passes write_pos), so pos
  //    is stale. pos - read wraps to a huge number, which the old check took for "full" and
  //    dropped a record of a ring that was nearly empty (issue 10 item 3). Reload and retry.
  // The retry cannot spin forever without progress: each retry follows another thread's claim.
  bool push(const format::Record& record) noexcept {
    auto write = counter(header_->write_pos);
    auto read = counter(header_->read_pos);
    uint64_t pos = write.load(std::memory_order_acquire);
    for (;;) {
      uint64_t consumed = read.load(std::memory_order_acquire);
      if (static_cast<int64_t>(pos - consumed) < 0) {  // stale pos: the consumer is past it
        pos = write.load(std::memory_order_acquire);
        continue;
      }
      if (pos - consumed >= capacity()) {
        counter(header_->dropped).fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      if (write.compare_exchange_weak(pos, pos + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        break;
      }
    }
    format::RingSlot& slot = slots_[pos & mask_];
    std::memcpy(&slot.record, &record, sizeof record);
    counter(slot.seq).store(pos + 1, std::memory_order_release);
    return true;
  }

  // Consumer side. Copies up to `max` committed records starting at read_pos into `out`, stopping
  // at the first slot not yet committed. Does not advance read_pos (call commit after storing).
  uint64_t peek(format::Record* out, uint64_t max) const noexcept {
    uint64_t read = counter(header_->read_pos).load(std::memory_order_relaxed);
    uint64_t write = counter(header_->write_pos).load(std::memory_order_acquire);
    uint64_t n = 0;
    while (n < max && read + n < write) {
      format::RingSlot& slot = slots_[(read + n) & mask_];
      if (counter(slot.seq).load(std::memory_order_acquire) != read + n + 1) break;
      std::memcpy(&out[n], &slot.record, sizeof(format::Record));
      ++n;
    }
    return n;
  }

  // Marks `n` records from read_pos as consumed: their slots may be reused.
  void commit(uint64_t n) noexcept {
    counter(header_->read_pos).fetch_add(n, std::memory_order_release);
    counter(header_->drained).fetch_add(n, std::memory_order_relaxed);
  }

  // The slot at read_pos is claimed but not committed (a hole if its producer is dead): true if
  // there is such a slot. Only meaningful after the producers are known dead or stopped.
  bool hole_at_read() const noexcept {
    uint64_t read = counter(header_->read_pos).load(std::memory_order_relaxed);
    uint64_t write = counter(header_->write_pos).load(std::memory_order_acquire);
    if (read >= write) return false;
    return counter(slots_[read & mask_].seq).load(std::memory_order_acquire) != read + 1;
  }

  // Skips the hole at read_pos (the record is lost, the caller counts it).
  void skip_hole() noexcept { counter(header_->read_pos).fetch_add(1, std::memory_order_release); }

  // read_pos first: write_pos loaded after it is >= it (read_pos never passes write_pos), so the
  // difference cannot wrap as it could with write_pos loaded first and the consumer moving on.
  uint64_t pending() const noexcept {
    uint64_t read = counter(header_->read_pos).load(std::memory_order_acquire);
    return counter(header_->write_pos).load(std::memory_order_acquire) - read;
  }

 private:
  format::SegmentHeader* header_ = nullptr;
  format::RingSlot* slots_ = nullptr;
  uint64_t mask_ = 0;
};

}  // namespace ncclwatch::shim

// The seqlock protocol of format::InFlightSlot, shared by its one writer (the owning thread, in
// the shim) and its readers (the shim's drain thread, `ncclwatch status`, salvage). Standard
// library only, like format.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "ncclwatch/format.h"

namespace ncclwatch::format {

namespace in_flight_detail {
inline constexpr std::size_t kEntryWords = sizeof(CallEntry) / sizeof(uint64_t);
static_assert(sizeof(CallEntry) % sizeof(uint64_t) == 0);
}  // namespace in_flight_detail

// Owner thread, before the real call: publishes `entry` and marks the slot active. No lock, no
// syscall, no read-modify-write, no fence: every data word is a release store, so a reader that
// sees any new word (acquire) also sees the odd version stored before it and retries. On x86 these
// are plain moves. (Fences would do the same, but ThreadSanitizer does not model them.)
inline void in_flight_enter(InFlightSlot& slot, const CallEntry& entry) noexcept {
  uint64_t words[in_flight_detail::kEntryWords];
  std::memcpy(words, &entry, sizeof words);
  const uint32_t v = __atomic_load_n(&slot.version, __ATOMIC_RELAXED);
  __atomic_store_n(&slot.version, v + 1, __ATOMIC_RELAXED);
  auto* dst = reinterpret_cast<uint64_t*>(&slot.entry);
  for (std::size_t i = 0; i < in_flight_detail::kEntryWords; ++i)
    __atomic_store_n(&dst[i], words[i], __ATOMIC_RELEASE);
  __atomic_store_n(&slot.calls, __atomic_load_n(&slot.calls, __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELEASE);
  __atomic_store_n(&slot.active, 1u, __ATOMIC_RELEASE);
  __atomic_store_n(&slot.version, v + 2, __ATOMIC_RELEASE);
}

// Owner thread, after the real call returned. The entry stays readable (last call entered).
inline void in_flight_leave(InFlightSlot& slot) noexcept {
  __atomic_store_n(&slot.active, 0u, __ATOMIC_RELEASE);
}

// Any reader, any process: a consistent copy of the slot, or false when the owner was writing
// it during every try (or died while writing: version stays odd).
inline bool in_flight_read(const InFlightSlot& slot, InFlightSlot& out) noexcept {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const uint32_t v1 = __atomic_load_n(&slot.version, __ATOMIC_ACQUIRE);
    if ((v1 & 1u) != 0) continue;
    // Acquire loads: the version re-read below cannot move before them (no fence needed).
    out.owner_tid = __atomic_load_n(&slot.owner_tid, __ATOMIC_ACQUIRE);
    out.active = __atomic_load_n(&slot.active, __ATOMIC_ACQUIRE);
    out.calls = __atomic_load_n(&slot.calls, __ATOMIC_ACQUIRE);
    uint64_t words[in_flight_detail::kEntryWords];
    const auto* src = reinterpret_cast<const uint64_t*>(&slot.entry);
    for (std::size_t i = 0; i < in_flight_detail::kEntryWords; ++i)
      words[i] = __atomic_load_n(&src[i], __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slot.version, __ATOMIC_RELAXED) != v1) continue;
    std::memcpy(&out.entry, words, sizeof words);
    out.version = v1;
    return true;
  }
  return false;
}

// The trace-file form of a slot seen in flight.
inline Record in_flight_record(const InFlightSlot& slot, int64_t seen_ns,
                               InFlightSource source) noexcept {
  Record rec{};
  InFlightRecord& r = rec.in_flight;
  r.prefix.kind = RecordKind::kInFlight;
  r.prefix.flags = slot.entry.flags;
  r.prefix.u8a = slot.entry.func;
  r.prefix.u8b = static_cast<uint8_t>(source);
  r.prefix.tid = slot.owner_tid;
  r.t_seen_ns = seen_ns;
  r.entry = slot.entry;
  return rec;
}

}  // namespace ncclwatch::format

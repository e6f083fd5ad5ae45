// Interns kernel and NVTX names into StringRecords: each distinct name is written once, as
// chunks, before the first record that refers to it. Fixed size, allocated once: a job with
// more distinct names than kCapacity keeps the first ones and refers to the rest as 0 ("").
// Used only by the activity converter (one thread at a time; the tracer serialises it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ncclwatch/format.h"

namespace ncclwatch::shim::gpu {

using RecordSink = bool (*)(const format::Record&) noexcept;

class StringTable {
 public:
  static constexpr std::size_t kCapacity = 1u << 14;  // distinct names
  explicit StringTable(RecordSink sink);

  // Id of `name` (> 0), writing its StringRecords the first time; 0 for null/empty or when
  // the table is full. Keyed by content.
  uint32_t intern(const char* name) noexcept;
  // Same, for strings whose pointer always names the same content (CUPTI's kernel names are
  // shared by every record of a kernel and never change): a pointer cache skips the hashing.
  uint32_t intern_stable(const char* name) noexcept;
  uint64_t overflowed() const noexcept { return overflowed_; }
  uint32_t size() const noexcept { return next_id_ - 1; }

 private:
  struct Slot {
    uint64_t hash;
    uint32_t id;
  };
  struct PointerSlot {
    const char* ptr;
    uint32_t id;
  };
  static constexpr std::size_t kPointerCache = 1u << 12;
  void write_chunks(uint32_t id, const char* name, std::size_t len) noexcept;

  RecordSink sink_;
  std::unique_ptr<Slot[]> slots_;              // open addressing on a 64-bit content hash
  std::unique_ptr<PointerSlot[]> by_pointer_;  // CUPTI hands the same pointer for one kernel
  uint32_t next_id_ = 1;
  uint64_t overflowed_ = 0;
};

}  // namespace ncclwatch::shim::gpu

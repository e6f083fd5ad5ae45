#include "string_table.h"

#include <cstring>

#include "ncclwatch/fnv1a.h"

namespace ncclwatch::shim::gpu {

StringTable::StringTable(RecordSink sink)
    : sink_(sink),
      slots_(new Slot[kCapacity * 2]()),
      by_pointer_(new PointerSlot[kPointerCache]()) {}

uint32_t StringTable::intern_stable(const char* name) noexcept {
  if (name == nullptr) return 0;
  auto& cached = by_pointer_[(reinterpret_cast<uintptr_t>(name) >> 3) & (kPointerCache - 1)];
  if (cached.ptr == name) return cached.id;
  uint32_t id = intern(name);
  cached = {name, id};
  return id;
}

uint32_t StringTable::intern(const char* name) noexcept {
  if (name == nullptr || name[0] == '\0') return 0;

  // FNV-1a, 64 bit: the table is keyed by content so equal names from different pointers
  // (two CUPTI sessions, NVTX strings) share one id.
  uint64_t h = format::kFnv1aOffset;
  std::size_t len = 0;
  for (; name[len] != '\0'; ++len)
    h = format::fnv1a64_byte(h, static_cast<unsigned char>(name[len]));
  if (h == 0) h = 1;  // 0 marks an empty slot
  const std::size_t mask = kCapacity * 2 - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.hash == h) return s.id;
    if (s.hash == 0) {
      if (next_id_ > kCapacity) {
        ++overflowed_;
        return 0;
      }
      s = {h, next_id_++};
      write_chunks(s.id, name, len);
      return s.id;
    }
  }
}

void StringTable::write_chunks(uint32_t id, const char* name, std::size_t len) noexcept {
  const std::size_t max_len = format::kMaxStringChunks * format::kStringChunkBytes;
  if (len > max_len) len = max_len;
  std::size_t chunks =
      len == 0 ? 1 : (len + format::kStringChunkBytes - 1) / format::kStringChunkBytes;
  for (std::size_t c = 0; c < chunks; ++c) {
    format::Record r{};
    r.string.prefix.kind = format::RecordKind::kString;
    r.string.prefix.tid = id;
    r.string.prefix.u8a = static_cast<uint8_t>(c);
    if (c + 1 == chunks) r.string.prefix.flags = format::kStringLastChunk;
    std::size_t off = c * format::kStringChunkBytes;
    std::size_t n = len - off < format::kStringChunkBytes ? len - off : format::kStringChunkBytes;
    std::memcpy(r.string.text, name + off, n);
    sink_(r);
  }
}

}  // namespace ncclwatch::shim::gpu

#include "trace/string_table.h"

#include <cstring>

#include "trace/trace_header_check.h"

namespace ncclwatch::trace {

static_assert(format::kMaxStringChunks <= 8, "present is an 8-bit mask");

void StringTable::add(const format::StringRecord& r) {
  const uint8_t chunk = r.prefix.u8a;
  if (r.prefix.tid == 0 || chunk >= format::kMaxStringChunks) return;  // record_check rejects these
  Pending& p = pending_[r.prefix.tid];
  std::memcpy(p.text.data() + chunk * format::kStringChunkBytes, r.text, format::kStringChunkBytes);
  p.present = static_cast<uint8_t>(p.present | (1u << chunk));
  if (r.prefix.flags & format::kStringLastChunk) p.last_chunk = static_cast<int8_t>(chunk);
}

void StringTable::finish() {
  for (auto& [id, p] : pending_) {
    std::string out;
    bool complete = p.last_chunk >= 0;
    const int end =
        p.last_chunk >= 0 ? p.last_chunk + 1 : static_cast<int>(format::kMaxStringChunks);
    for (int i = 0; i < end; ++i) {
      if (!(p.present & (1u << i))) {
        // A missing chunk ends the usable prefix; "missing" only matters before the last chunk
        // or when no last chunk was ever seen.
        complete = false;
        break;
      }
      const char* chunk = p.text.data() + i * format::kStringChunkBytes;
      const auto* nul =
          static_cast<const char*>(std::memchr(chunk, '\0', format::kStringChunkBytes));
      // bounded_string makes the text safe to print (it came from an untrusted file).
      out += bounded_string(chunk, format::kStringChunkBytes);
      if (nul != nullptr) break;  // a NUL inside a chunk ends the string early
    }
    if (!complete) ++incomplete_;
    texts_[id] += out;  // keep text assembled by an earlier finish() call, if any
  }
  pending_.clear();
}

const std::string* StringTable::text(uint32_t id) const {
  const auto it = texts_.find(id);
  return it == texts_.end() ? nullptr : &it->second;
}

}  // namespace ncclwatch::trace

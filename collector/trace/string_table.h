// Reassembles interned strings (kernel and NVTX names) from StringRecord chunks. Chunks of one
// string may arrive in any order, interleaved with other records, possibly after the records that
// use the id; and some may be missing (drops). A string is its chunks 0..k in order, up to the
// last-chunk flag or the first missing chunk.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "ncclwatch/format.h"

namespace ncclwatch::trace {

class StringTable {
 public:
  void add(const format::StringRecord& record);

  // Assembles every string seen so far (call after the last add()).
  void finish();

  // The assembled text of `id`, nullptr if no chunk of it was seen. Valid after finish().
  const std::string* text(uint32_t id) const;
  // Strings with chunks missing (before the last chunk, or no last chunk at all).
  std::size_t incomplete() const { return incomplete_; }
  std::size_t size() const { return texts_.size(); }

 private:
  struct Pending {
    std::array<char, format::kStringChunkBytes * format::kMaxStringChunks> text{};
    uint8_t present = 0;     // bit i: chunk i seen
    int8_t last_chunk = -1;  // index of the chunk flagged last, -1 if not seen
  };
  std::unordered_map<uint32_t, Pending> pending_;
  std::unordered_map<uint32_t, std::string> texts_;
  std::size_t incomplete_ = 0;
};

}  // namespace ncclwatch::trace

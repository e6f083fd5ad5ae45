// FNV-1a, 64 bit: the one byte hash of ncclwatch. Comm ids (shim/nccl/comm_id.cpp, then a
// finaliser), interned kernel names (shim/gpu/string_table.cpp) and Kineto process-group ids
// (collector/kineto) all use it, so ids computed on different ranks and by different readers
// agree. Standard library only, like format.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclwatch::format {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnv1aPrime = 0x100000001b3ULL;

// Folds `size` bytes into the running hash `h` (start from kFnv1aOffset).
constexpr uint64_t fnv1a64(uint64_t h, const unsigned char* bytes, std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * kFnv1aPrime;
  return h;
}

constexpr uint64_t fnv1a64_byte(uint64_t h, unsigned char byte) noexcept {
  return (h ^ byte) * kFnv1aPrime;
}

}  // namespace ncclwatch::format

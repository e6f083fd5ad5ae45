// A 64-byte block of a segment header (format.h: DrainCheckpoint, CaptureRequest) copied under
// a seqlock whose version is its first 32-bit word: odd while the one writer writes, even when the
// block is consistent. Writer and reader may be different processes (the block is in the shared
// mapping), so every word is an atomic access (release stores, acquire loads), as in
// in_flight_slot.h. Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ncclwatch::format {

namespace seqlock_detail {
template <typename Block>
constexpr void check() {
  static_assert(sizeof(Block) == 64 && std::is_trivially_copyable_v<Block>);
  static_assert(offsetof(Block, version) == 0 && sizeof(Block::version) == 4);
}
}  // namespace seqlock_detail

// The writer: `value` (its version ignored) becomes the block's content.
template <typename Block>
void seqlock_store(Block& block, const Block& value) noexcept {
  seqlock_detail::check<Block>();
  uint32_t half;
  uint64_t words[7];
  std::memcpy(&half, reinterpret_cast<const char*>(&value) + 4, 4);
  std::memcpy(words, reinterpret_cast<const char*>(&value) + 8, sizeof words);
  auto* base = reinterpret_cast<char*>(&block);
  const uint32_t v = __atomic_load_n(&block.version, __ATOMIC_RELAXED);
  __atomic_store_n(&block.version, v | 1u, __ATOMIC_RELAXED);  // odd: writing
  __atomic_store_n(reinterpret_cast<uint32_t*>(base + 4), half, __ATOMIC_RELEASE);
  auto* dst = reinterpret_cast<uint64_t*>(base + 8);
  for (std::size_t i = 0; i < 7; ++i) __atomic_store_n(&dst[i], words[i], __ATOMIC_RELEASE);
  __atomic_store_n(&block.version, (v | 1u) + 1u, __ATOMIC_RELEASE);
}

// Any reader: a consistent copy, or false when the writer was writing during every try (or died
// while writing). A block never written (version 0) reads as all zeros.
template <typename Block>
bool seqlock_load(const Block& block, Block& out) noexcept {
  seqlock_detail::check<Block>();
  const auto* base = reinterpret_cast<const char*>(&block);
  for (int attempt = 0; attempt < 8; ++attempt) {
    const uint32_t v1 = __atomic_load_n(&block.version, __ATOMIC_ACQUIRE);
    if ((v1 & 1u) != 0) continue;
    const uint32_t half = __atomic_load_n(reinterpret_cast<const uint32_t*>(base + 4),
                                          __ATOMIC_ACQUIRE);
    uint64_t words[7];
    const auto* src = reinterpret_cast<const uint64_t*>(base + 8);
    for (std::size_t i = 0; i < 7; ++i) words[i] = __atomic_load_n(&src[i], __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&block.version, __ATOMIC_RELAXED) != v1) continue;
    auto* o = reinterpret_cast<char*>(&out);
    std::memcpy(o, &v1, 4);
    std::memcpy(o + 4, &half, 4);
    std::memcpy(o + 8, words, sizeof words);
    return true;
  }
  return false;
}

}  // namespace ncclwatch::format

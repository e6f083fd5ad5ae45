// Communicator ids (format.h rules): every rank of a communicator computes the same 64-bit value
// without talking to the others. Never 0 (0 means "no communicator").
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclwatch::shim {

// InitRank / InitRankConfig (and InitRankScalable with its first id): hash of the unique id bytes.
uint64_t comm_id_from_unique_id(const void* bytes, std::size_t size) noexcept;
// Split: (parent id, index of this split/shrink among the parent's, color).
uint64_t comm_id_for_split(uint64_t parent, uint32_t index, int color) noexcept;
// Shrink: (parent id, index among the parent's splits/shrinks, excluded ranks sorted ascending).
uint64_t comm_id_for_shrink(uint64_t parent, uint32_t index, const int* excluded,
                            int count) noexcept;
// InitAll: ("initall", pid, per-process InitAll counter).
uint64_t comm_id_for_init_all(int64_t pid, uint32_t counter) noexcept;
// Hash of a unique id as recorded by UniqueIdRecord (equals comm_id_from_unique_id).
inline uint64_t unique_id_hash(const void* bytes, std::size_t size) noexcept {
  return comm_id_from_unique_id(bytes, size);
}

}  // namespace ncclwatch::shim

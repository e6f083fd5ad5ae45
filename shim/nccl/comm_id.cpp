#include "nccl/comm_id.h"

#include <algorithm>
#include <cstring>

#include "ncclwatch/fnv1a.h"

namespace ncclwatch::shim {
namespace {

// FNV-1a over the bytes, then the splitmix64 finaliser so close inputs land far apart.
struct Hasher {
  uint64_t h = format::kFnv1aOffset;
  void add(const void* data, std::size_t size) {
    h = format::fnv1a64(h, static_cast<const unsigned char*>(data), size);
  }
  template <typename T>
  void add_value(T v) {
    add(&v, sizeof v);
  }
  uint64_t finish() const {
    uint64_t z = h + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return z == 0 ? 1 : z;
  }
};

}  // namespace

uint64_t comm_id_from_unique_id(const void* bytes, std::size_t size) noexcept {
  Hasher h;
  h.add(bytes, size);
  return h.finish();
}

uint64_t comm_id_for_split(uint64_t parent, uint32_t index, int color) noexcept {
  Hasher h;
  h.add("split", 5);
  h.add_value(parent);
  h.add_value(index);
  h.add_value(static_cast<int32_t>(color));
  return h.finish();
}

uint64_t comm_id_for_shrink(uint64_t parent, uint32_t index, const int* excluded,
                            int count) noexcept {
  Hasher h;
  h.add("shrink", 6);
  h.add_value(parent);
  h.add_value(index);
  // Sorted without allocating: repeatedly take the next larger value (lists are short).
  int64_t last = INT64_MIN;
  for (int done = 0; excluded != nullptr && done < count; ++done) {
    int64_t next = INT64_MAX;
    int copies = 0;
    for (int i = 0; i < count; ++i) {
      if (excluded[i] > last && excluded[i] < next) {
        next = excluded[i];
        copies = 1;
      } else if (excluded[i] == next) {
        ++copies;
      }
    }
    if (next == INT64_MAX) break;
    for (int c = 0; c < copies; ++c) h.add_value(static_cast<int32_t>(next));
    done += copies - 1;
    last = next;
  }
  return h.finish();
}

uint64_t comm_id_for_init_all(int64_t pid, uint32_t counter) noexcept {
  Hasher h;
  h.add("initall", 7);
  h.add_value(pid);
  h.add_value(counter);
  return h.finish();
}

}  // namespace ncclwatch::shim

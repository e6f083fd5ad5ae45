// Checked time arithmetic for values read from untrusted traces: a timestamp near INT64_MAX or
// INT64_MIN (a corrupt record, a wild clock offset) must not overflow signed arithmetic (UB) and
// turn a lateness into "-2305843009 s". Results clamp to the int64 range instead.
#pragma once

#include <cstdint>
#include <limits>

namespace ncclwatch::analysis {

inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// floor((a + b) / 2) without overflow.
inline int64_t midpoint(int64_t a, int64_t b) {
  return (a >> 1) + (b >> 1) + (a & b & 1);
}

}  // namespace ncclwatch::analysis

// Checked int64 nanosecond arithmetic for values read from untrusted traces: a timestamp near
// INT64_MAX or INT64_MIN (a corrupt record, a wild clock offset) must give a wrong-but-bounded
// result that the checks downstream reject, never signed overflow (undefined behaviour; UBSan
// found "lateness -2305843009 s"). Results clamp to the int64 range instead. Shared by clock
// alignment and the analyses.
#pragma once

#include <cstdint>
#include <limits>

namespace ncclwatch::model {

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

inline int64_t sat_neg(int64_t a) {
  return a == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -a;
}

inline int64_t sat_abs(int64_t a) {
  return a < 0 ? sat_neg(a) : a;
}

// A double (nanoseconds scaled, averaged, or a spread) as int64, clamped to the int64 range, NaN
// as 0. A plain static_cast of a value outside the range is undefined behaviour.
inline int64_t sat_int64(double x) {
  constexpr double kTwo63 = 9223372036854775808.0;  // 2^63, exact in a double
  if (x != x) return 0;
  if (x >= kTwo63) return std::numeric_limits<int64_t>::max();
  if (x < -kTwo63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                            : std::numeric_limits<int64_t>::max();
}

}  // namespace ncclwatch::model

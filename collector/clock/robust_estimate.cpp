#include "clock/robust_estimate.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "clock/saturating.h"

namespace ncclwatch::clock {

namespace {

int64_t median_of(std::vector<int64_t>& v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  int64_t hi = *mid;
  if (v.size() % 2 == 1) return hi;
  int64_t lo = *std::max_element(v.begin(), mid);
  int64_t gap;  // hi - lo >= 0; only a span over 2^63 (untrusted times) overflows it
  if (__builtin_sub_overflow(hi, lo, &gap)) return lo / 2 + hi / 2;
  return lo + gap / 2;
}

int64_t spread_of(const std::vector<int64_t>& v, int64_t median) {
  std::vector<int64_t> dev(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) dev[i] = sat_abs(sat_sub(v[i], median));
  // 1.4826 x MAD, clamped below 2^63 (a MAD near INT64_MAX must not overflow the conversion).
  const double s = 1.4826 * static_cast<double>(median_of(dev));
  return s >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(s);
}

}  // namespace

RobustEstimate robust_estimate(std::vector<int64_t>& samples, int64_t floor_ns) {
  RobustEstimate e;
  if (samples.empty()) return e;
  int64_t m = median_of(samples);
  int64_t limit = std::max<int64_t>(sat_mul(4, spread_of(samples, m)), floor_ns);
  auto keep_end = std::partition(samples.begin(), samples.end(),
                                 [&](int64_t x) { return sat_abs(sat_sub(x, m)) <= limit; });
  e.kept = static_cast<uint64_t>(keep_end - samples.begin());
  e.rejected = samples.size() - e.kept;
  samples.erase(keep_end, samples.end());
  e.median = median_of(samples);  // never empty: the first median itself is within the limit
  e.spread = spread_of(samples, e.median);
  return e;
}

}  // namespace ncclwatch::clock

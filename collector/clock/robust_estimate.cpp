#include "clock/robust_estimate.h"

#include <algorithm>
#include <cstdlib>

namespace ncclwatch::clock {

namespace {

int64_t median_of(std::vector<int64_t>& v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  int64_t hi = *mid;
  if (v.size() % 2 == 1) return hi;
  int64_t lo = *std::max_element(v.begin(), mid);
  return lo + (hi - lo) / 2;
}

int64_t spread_of(const std::vector<int64_t>& v, int64_t median) {
  std::vector<int64_t> dev(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) dev[i] = std::llabs(v[i] - median);
  return static_cast<int64_t>(1.4826 * static_cast<double>(median_of(dev)));
}

}  // namespace

RobustEstimate robust_estimate(std::vector<int64_t>& samples, int64_t floor_ns) {
  RobustEstimate e;
  if (samples.empty()) return e;
  int64_t m = median_of(samples);
  int64_t limit = std::max<int64_t>(4 * spread_of(samples, m), floor_ns);
  auto keep_end = std::partition(samples.begin(), samples.end(),
                                 [&](int64_t x) { return std::llabs(x - m) <= limit; });
  e.kept = static_cast<uint64_t>(keep_end - samples.begin());
  e.rejected = samples.size() - e.kept;
  samples.erase(keep_end, samples.end());
  e.median = median_of(samples);  // never empty: the first median itself is within the limit
  e.spread = spread_of(samples, e.median);
  return e;
}

}  // namespace ncclwatch::clock

#include "clock/robust_estimate.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "model/median.h"
#include "model/saturating.h"

namespace ncclwatch::clock {

using model::sat_abs;
using model::sat_mul;
using model::sat_sub;

namespace {

int64_t spread_of(const std::vector<int64_t>& v, int64_t median) {
  std::vector<int64_t> dev(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) dev[i] = sat_abs(sat_sub(v[i], median));
  // 1.4826 x MAD, clamped below 2^63 (a MAD near INT64_MAX must not overflow the conversion).
  const double s = 1.4826 * static_cast<double>(model::median(std::move(dev)));
  return s >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(s);
}

}  // namespace

RobustEstimate robust_estimate(std::vector<int64_t>& samples, int64_t floor_ns) {
  RobustEstimate e;
  if (samples.empty()) return e;
  int64_t m = model::median_in_place(std::span<int64_t>(samples));
  int64_t limit = std::max<int64_t>(sat_mul(4, spread_of(samples, m)), floor_ns);
  auto keep_end = std::partition(samples.begin(), samples.end(),
                                 [&](int64_t x) { return sat_abs(sat_sub(x, m)) <= limit; });
  e.kept = static_cast<uint64_t>(keep_end - samples.begin());
  e.rejected = samples.size() - e.kept;
  samples.erase(keep_end, samples.end());
  e.median = model::median_in_place(
      std::span<int64_t>(samples));  // never empty: the first median itself is within the limit
  e.spread = spread_of(samples, e.median);
  return e;
}

}  // namespace ncclwatch::clock

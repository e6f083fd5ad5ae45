#include "clock/robust_estimate.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "model/median.h"
#include "model/robust_spread.h"
#include "model/saturating.h"

namespace ncclwatch::clock {

using model::sat_abs;
using model::sat_mul;
using model::sat_sub;

using model::robust_spread;

RobustEstimate robust_estimate(std::vector<int64_t>& samples, int64_t floor_ns) {
  RobustEstimate e;
  if (samples.empty()) return e;
  int64_t m = model::median_in_place(std::span<int64_t>(samples));
  int64_t limit = std::max<int64_t>(sat_mul(4, robust_spread(samples, m)), floor_ns);
  auto keep_end = std::partition(samples.begin(), samples.end(),
                                 [&](int64_t x) { return sat_abs(sat_sub(x, m)) <= limit; });
  e.kept = static_cast<uint64_t>(keep_end - samples.begin());
  e.rejected = samples.size() - e.kept;
  samples.erase(keep_end, samples.end());
  e.median = model::median_in_place(
      std::span<int64_t>(samples));  // never empty: the first median itself is within the limit
  e.spread = robust_spread(samples, e.median);
  return e;
}

}  // namespace ncclwatch::clock

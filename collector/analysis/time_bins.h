// Equal time bins on the clock-aligned axis and the share of each bin an interval set covers:
// the arithmetic behind the utilization curve (utilization_curve.h), the nvidia-smi-like samples
// and the swimlanes (step_swimlane.h). A rank's sets are on its own clock; `offset` (its
// ClockAlignment::at) puts them on the aligned axis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/interval_set.h"

namespace ncclwatch::analysis {

struct TimeBins {
  int64_t begin_ns = 0;  // aligned
  int64_t width_ns = 1;
  std::size_t count = 0;

  int64_t end_ns() const { return begin_ns + width_ns * static_cast<int64_t>(count); }
  // Bins of a "nice" width (1, 2 or 5 x 10^k ns, at least `min_width_ns`) no wider than
  // `target_ns`, covering [begin, end).
  static TimeBins nice(int64_t begin_ns, int64_t end_ns, int64_t target_ns,
                       int64_t min_width_ns = 1000);
  // `count` bins of exactly (end - begin) / count (at least 1 ns) from begin.
  static TimeBins exact(int64_t begin_ns, int64_t end_ns, std::size_t count);
};

// The nice width (1, 2 or 5 x 10^k ns) at most `ns` (at least 1), and the one at least `ns`.
int64_t nice_floor(int64_t ns);
int64_t nice_ceil(int64_t ns);

// out[b] = share (0..1) of bin b that `set` (rank clock) covers once shifted by `offset`.
// O(|set| + bins). `out` is resized to bins.count.
void cover_fractions(const IntervalSet& set, int64_t offset, const TimeBins& bins,
                     std::vector<float>& out);

}  // namespace ncclwatch::analysis

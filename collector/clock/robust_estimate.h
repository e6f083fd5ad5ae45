// Median with outliers rejected by the median absolute deviation (MAD): one late wake-up or a
// descheduled rank must not move a clock offset.
#pragma once

#include <cstdint>
#include <vector>

namespace ncclwatch::clock {

struct RobustEstimate {
  int64_t median = 0;  // median of the samples kept
  int64_t spread = 0;  // 1.4826 x MAD of the samples kept (a standard deviation for normal noise)
  uint64_t kept = 0;
  uint64_t rejected = 0;
};

// Samples farther than max(4 x spread, floor_ns) from the first median are rejected, then the
// median and spread are recomputed on the rest. Reorders `samples`. Empty input gives all zeros.
RobustEstimate robust_estimate(std::vector<int64_t>& samples, int64_t floor_ns = 2000);

}  // namespace ncclwatch::clock

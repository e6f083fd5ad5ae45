// Small robust statistics for the straggler verdicts: medians and MAD (one outlier rank or one
// GC pause does not move them), the binomial tail of a sign test, and the normal quantile used
// for a Bonferroni-corrected threshold.
#pragma once

#include <cstdint>
#include <vector>

#include "model/median.h"
#include "model/robust_spread.h"

namespace ncclwatch::analysis::stats {

// The collector's one median (model/median.h: mean of the two middle values for an even count).
using model::median;
// 1.4826 x median absolute deviation from the median: ≈ σ for Gaussian data
// (model/robust_spread.h).
using model::robust_spread;
// P(X >= k) for X ~ Binomial(n, p).
double binomial_tail(uint64_t n, uint64_t k, double p);
// z with P(Z > z) = q for a standard normal Z (0 < q < 1).
double normal_upper_quantile(double q);

}  // namespace ncclwatch::analysis::stats

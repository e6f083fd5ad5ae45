#include "analysis/robust_stats.h"

#include <math.h>  // lgamma_r

#include <algorithm>
#include <cmath>

namespace ncclwatch::analysis::stats {
namespace {

// ln(n!) as lgamma(n + 1). Not std::lgamma: it writes the sign to the global `signgam`, a data
// race once the verdicts run on several threads (found by TSan); lgamma_r returns it instead.
double ln_factorial(double n) {
  int sign = 0;
  return ::lgamma_r(n + 1, &sign);
}

}  // namespace

double binomial_tail(uint64_t n, uint64_t k, double p) {
  if (k == 0) return 1.0;
  if (k > n) return 0.0;
  if (p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  // Sum of the terms from k to n in log space (n is a step or instance count: small enough).
  const double lp = std::log(p), lq = std::log1p(-p);
  const double ln_fact_n = ln_factorial(static_cast<double>(n));
  double sum = 0;
  for (uint64_t i = k; i <= n; ++i) {
    const double di = static_cast<double>(i);
    const double term = ln_fact_n - ln_factorial(di) - ln_factorial(static_cast<double>(n - i)) +
                        di * lp + static_cast<double>(n - i) * lq;
    const double t = std::exp(term);
    sum += t;
    if (t < sum * 1e-17 && di > static_cast<double>(n) * p) break;  // remaining terms shrink
  }
  return std::min(1.0, sum);
}

double normal_upper_quantile(double q) {
  if (q >= 0.5) return 0;
  q = std::max(q, 1e-300);
  // Bisection on erfc: P(Z > z) = erfc(z / sqrt 2) / 2, monotone in z.
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    if (0.5 * std::erfc(mid / std::sqrt(2.0)) > q) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

}  // namespace ncclwatch::analysis::stats

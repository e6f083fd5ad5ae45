// The collector's one robust spread: 1.4826 x the median absolute deviation from the median, an
// estimate of σ for Gaussian noise that one outlier, one GC pause or one persistently late rank
// does not inflate. Clock alignment (residuals of the offset fit), the straggler statistics (a
// rank's jitter) and the verdicts (the noise σ) all use it. Inputs come from untrusted traces:
// integer deviations saturate, the result is clamped into int64 (model/saturating.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "model/median.h"
#include "model/saturating.h"

namespace ncclwatch::model {

// 1 / Φ⁻¹(3/4): the MAD of a normal sample times this estimates its σ.
inline constexpr double kMadToSigma = 1.4826;

// Nanoseconds around their known median `median` (0 for fewer than 2 samples).
inline int64_t robust_spread(std::span<const int64_t> v, int64_t median) {
  if (v.size() < 2) return 0;
  std::vector<int64_t> dev(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) dev[i] = sat_abs(sat_sub(v[i], median));
  return sat_int64(kMadToSigma * static_cast<double>(median_in_place(std::span<int64_t>(dev))));
}

inline int64_t robust_spread(std::vector<int64_t> v) {
  const int64_t m = median_in_place(std::span<int64_t>(v));
  return robust_spread(std::span<const int64_t>(v), m);
}

// Real values: NaN samples carry nothing and are left out (0 for fewer than 2 left); an
// infinite median gives an infinite spread.
inline double robust_spread(std::vector<double> v) {
  std::erase_if(v, [](double x) { return std::isnan(x); });
  if (v.size() < 2) return 0;
  const double m = median_in_place(std::span<double>(v));
  if (std::isinf(m)) return INFINITY;
  for (double& x : v) x = std::fabs(x - m);
  return kMadToSigma * median_in_place(std::span<double>(v));
}

}  // namespace ncclwatch::model

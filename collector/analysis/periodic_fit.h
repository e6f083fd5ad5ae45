// "Late every Nth step": the period and phase on which a rank's spike steps sit, accepted only
// when the phase is consistent (>= 80 % of the steps at that phase are spikes, at least 3) and
// chance cannot explain it: the binomial tail of the hits at the rank's background spike rate,
// multiplied by the number of (period, phase) candidates and ranks tried, stays below alpha.
// Random spikes around the stall (GC, OS jitter) raise the background rate, not the phase.
#pragma once

#include <cstddef>
#include <vector>

namespace ncclwatch::analysis {

struct PeriodicFit {
  std::size_t period = 0;           // 0: no periodic pattern
  std::vector<std::size_t> fitted;  // the spike steps at that phase (absolute step indices)
  std::size_t positions = 0;        // steps at that phase within the steady steps
  double p_value = 1.0;             // corrected for the candidates tried (not for ranks)

  // `spike[k]` for steps k in [first, spike.size()): is step k a spike (absent steps: false and
  // `present[k]` false). `background` is the spike rate expected by chance (peers' rate).
  // `tests_factor` multiplies the p-value (ranks tested), `alpha` the family-wise level.
  static PeriodicFit of(const std::vector<bool>& spike, const std::vector<bool>& present,
                        std::size_t first, double background, double tests_factor, double alpha);
};

}  // namespace ncclwatch::analysis

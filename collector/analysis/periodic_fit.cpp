#include "analysis/periodic_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "analysis/robust_stats.h"

namespace ncclwatch::analysis {

PeriodicFit PeriodicFit::of(const std::vector<bool>& spike, const std::vector<bool>& present,
                            std::size_t first, double background, double tests_factor,
                            double alpha) {
  PeriodicFit best;
  const std::size_t end = std::min(spike.size(), present.size());
  if (end <= first) return best;
  std::size_t steps = 0, spikes = 0;
  for (std::size_t k = first; k < end; ++k) {
    steps += present[k];
    spikes += present[k] && spike[k];
  }
  if (spikes < 3 || steps < 6) return best;
  // Periods with room for 3 positions (steps >= 2p + 1) and at most 512 steps:
  // bounded work, and nobody schedules "every 1000th step" inside a profiled window.
  const std::size_t max_period = std::min<std::size_t>((steps - 1) / 2, 512);
  double candidates = 0;
  for (std::size_t p = 2; p <= max_period; ++p) candidates += static_cast<double>(p);
  long best_score = 0;
  // A phase needs 3+ hits: count the spikes per residue first (O(spikes) per period) and scan
  // only the phases that have them, instead of every step for every period (O(steps) per period
  // was 10% of analyze() on an 8000-step job).
  // present (bit 0) and spike-and-present (bit 1) per step from `first`: a byte per step scans
  // faster than two vector<bool>s.
  std::vector<uint8_t> flags(end - first);
  for (std::size_t k = first; k < end; ++k) {
    flags[k - first] =
        static_cast<uint8_t>((present[k] ? 1u : 0u) | (present[k] && spike[k] ? 2u : 0u));
  }
  std::vector<std::size_t> spike_steps;
  for (std::size_t k = first; k < end && 8 * spike_steps.size() < steps; ++k) {
    if (present[k] && spike[k]) spike_steps.push_back(k);
  }
  // With spikes in an eighth of the steps or more, most phases have 3: counting adds work.
  const bool sparse = 8 * spike_steps.size() < steps;
  std::vector<std::size_t> hits_of(max_period + 1, 3);
  // A rank late in every present step (a persistent straggler): each phase has hits ==
  // positions, and its off-phase rate is 1 wherever any present step is off the phase, so the
  // "hits no more than n·q" test below rejects it. Only a phase holding every present step can
  // pass: periods dividing the gcd of the present steps' distances. Skipping the others gives
  // the same fit without scanning every phase of every period (7% of analyze() on 8000 steps).
  const bool every_step = spikes == steps && tests_factor > alpha;
  std::size_t present_gcd = 0;
  if (every_step) {
    std::size_t k0 = end;
    for (std::size_t k = first; k < end; ++k) {
      if (!present[k]) continue;
      if (k0 == end) k0 = k;
      present_gcd = std::gcd(present_gcd, k - k0);
    }
  }
  for (std::size_t p = 2; p <= max_period; ++p) {
    // No phase of p (or of any longer period) has more positions than this, and a score never
    // exceeds its positions: nothing later can beat the best (a rank late in every step would
    // otherwise scan every period).
    if (static_cast<long>((end - first + p - 1) / p) <= best_score) break;
    if (every_step && present_gcd % p != 0) continue;
    if (sparse) {
      std::fill(hits_of.begin(), hits_of.begin() + static_cast<std::ptrdiff_t>(p), 0);
      for (std::size_t k : spike_steps) ++hits_of[k % p];
    }
    for (std::size_t phase = 0; phase < p; ++phase) {
      if (hits_of[phase] < 3) continue;
      std::size_t positions = 0, hits = 0;
      for (std::size_t k = first + ((phase + p - first % p) % p); k < end; k += p) {
        positions += flags[k - first] & 1u;
        hits += flags[k - first] >> 1;
      }
      if (hits < 3 || 5 * hits < 4 * positions) continue;
      // Each hit counts, each missed position twice, so "every 4th" beats "every 8th" (half
      // the hits) and "every 2nd" (half its positions missed) on the same spikes.
      const long score = static_cast<long>(hits) - 2 * static_cast<long>(positions - hits);
      if (score <= best_score) continue;
      // Background rate: the larger of the peers' rate and this rank's own off-phase rate, and
      // never below half a spike per run (a rank with no other spikes is not proof of zero).
      const std::size_t off_steps = steps - positions, off_spikes = spikes - hits;
      const double own_off = off_steps ? static_cast<double>(off_spikes) / off_steps : 0.0;
      const double q = std::max(
          {background, own_off, 0.5 / static_cast<double>(std::max<std::size_t>(steps, 1))});
      // Hits no more than n·q: P(X >= hits) >= 1/2 (the binomial median is >= floor(n·q)), so
      // p_value is 1 (candidates >= 2) — not significant, without computing the tail.
      if (tests_factor > alpha &&
          static_cast<double>(hits) <= std::floor(q * static_cast<double>(positions)))
        continue;
      const double p_value = std::min(1.0, stats::binomial_tail(positions, hits, q) * candidates);
      if (p_value * tests_factor > alpha) continue;
      best_score = score;
      best.period = p;
      best.positions = positions;
      best.p_value = p_value;
      best.fitted.clear();
      for (std::size_t k = first + ((phase + p - first % p) % p); k < end; k += p) {
        if (present[k] && spike[k]) best.fitted.push_back(k);
      }
    }
  }
  return best;
}

}  // namespace ncclwatch::analysis

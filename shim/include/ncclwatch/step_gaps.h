// Which multiple of the token period is a training step, from the gaps between collectives: the
// one statistic the shim's step learner (shim/record/step_learner.h, while the job runs) and the
// collector's step plan (collector/analysis/step_plan.h, after it) share, so that what a rank's
// summaries call a step and what the report calls one agree. Equal buckets (every collective
// alike: token period 1) repeat every call, so only the gaps say which call starts a step: the
// forward pass leaves a wide gap before a step's first bucket.
//
// Robust statistics rather than counts of threshold crossings, because a busy machine (CPU
// contention) adds gaps of 0.1-20 ms (a preempted thread) to a sizeable fraction of the calls at
// any phase, differently on every rank: threshold counts then took half or a quarter of the step
// on one rank and the whole step on another. These rules rather find nothing (the caller then
// has no step from the gaps) than a part of the step.
//
// Not on the hot path: the shim runs them on its drain thread while it learns (a few times per
// run, on at most a few thousand gaps), so they may allocate. Standard library only, like
// format.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace ncclwatch::step_gaps {

// Gaps below this are "back to back" (a kernel queued behind the previous one).
inline constexpr int64_t kGapFloorNs = 1000;
// Wide gaps are at least this much wider than narrow ones (DDP: forward + optimizer + first
// backward segment vs one backward segment minus its all-reduce; often only ~2x).
inline constexpr double kMinGapJump = 1.5;
// Gaps at the phases of a period are alike (no step there) within this factor: below
// kMinGapJump, so that a step too faint to be learned from (wide gaps 1.2-1.5x the narrow ones)
// is not taken for one collective per step either.
inline constexpr double kFlatJump = 1.2;
// Steps of up to this many times the token period are looked for.
inline constexpr std::size_t kMaxMultiple = 64;

// What floored_gaps raises every gap to: a twentieth of the 90 % quantile, at least kGapFloorNs.
inline int64_t gap_floor(const std::vector<int64_t>& g) {
  if (g.empty()) return kGapFloorNs;
  std::vector<int64_t> sorted = g;
  const auto q90 =
      sorted.begin() + static_cast<std::ptrdiff_t>(0.9 * static_cast<double>(sorted.size() - 1));
  std::nth_element(sorted.begin(), q90, sorted.end());
  return std::max(kGapFloorNs, *q90 / 20);
}

// The gaps from `from` on (index 0 = gaps[from]), with those far below the wide ones floored:
// launch jitter (1 us vs 7 us is a big ratio) is no step structure.
inline std::vector<int64_t> floored_gaps(const std::vector<int64_t>& gaps, std::size_t from) {
  std::vector<int64_t> g(gaps.begin() + static_cast<std::ptrdiff_t>(std::min(from, gaps.size())),
                         gaps.end());
  if (g.empty()) return g;
  const int64_t floor = gap_floor(g);
  for (int64_t& x : g) x = std::max(x, floor);
  return g;
}

// The q-quantile (lower) of the gaps g[o], g[o + P], ...; `scratch` is reused.
inline int64_t phase_quantile(const std::vector<int64_t>& g, std::size_t P, std::size_t o, double q,
                              std::vector<int64_t>& scratch) {
  scratch.clear();
  for (std::size_t k = o; k < g.size(); k += P) scratch.push_back(g[k]);
  if (scratch.empty()) return 0;
  const auto at =
      scratch.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(scratch.size() - 1));
  std::nth_element(scratch.begin(), at, scratch.end());
  return *at;
}

// The lowest and highest q-quantile among the r interleaved parts of phase o of P (its phases
// o, o + P, ..., o + (r - 1) P of rP): how alike the phase is throughout.
inline std::pair<int64_t, int64_t> interleaved_range(const std::vector<int64_t>& g, std::size_t P,
                                                     std::size_t o, std::size_t r, double q,
                                                     std::vector<int64_t>& scratch) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (std::size_t part = 0; part < r; ++part) {
    const int64_t x = phase_quantile(g, r * P, o + part * P, q, scratch);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return {lo, hi};
}

// The one multiple P = m x p (m up to kMaxMultiple, while `need` x P gaps are there) for which
// `is_step(P, phase)` holds: false if none or more than one does (the gaps are not clear:
// deciding now could differ between ranks).
template <typename IsStep>
inline bool one_multiple(std::size_t p, std::size_t size, std::size_t need, IsStep is_step,
                         std::size_t& period, std::size_t& phase) {
  if (p == 0) return false;
  bool found = false;
  for (std::size_t m = 1; m <= kMaxMultiple && need * m * p <= size; ++m) {
    std::size_t o = 0;
    if (!is_step(m * p, o)) continue;
    if (found) return false;
    found = true;
    period = m * p;
    phase = o;
  }
  return found;
}

// Is P calls a step of the (floored) gaps g, starting at phase o?
//  - the median gap at o is kMinGapJump times the largest median at the other phases (a random
//    extra gap shifts a median only where half the gaps of that phase have one). Not a lower
//    quantile, though beside two CPU hogs fake_train's narrow phases had their medians within
//    1.5x of the wide one and their lower quartiles near zero: where a late call shortens the
//    gap after it (the GPU paces the rank), a quarter of any phase's gaps is near zero, and in
//    seeded simulations a phase's lower quartile stood out by chance (7 calls per step for 4);
//  - most gaps at o (3/4) are above the threshold between the two, in each half of them (the
//    phases o and o + P of twice the step): at half the true step, phase o holds the step's
//    wide gaps and as many narrow ones. Not all: where the GPU paces the rank (the wide gap is
//    a wait for the previous step), a late call before it shortens it (1 ms steps of
//    fake_train beside CPU hogs: 15 % of the wide gaps below the threshold);
//  - the step phase is alike throughout: in 2 or 3 interleaved parts (the phases o, o + P, ...
//    of 2P or 3P) its medians are within kMinGapJump of each other. A pattern of gaps "wide,
//    narrow, half-wide, narrow" (the rank's own delay before one bucket in the middle of a step,
//    seen under fake_train beside CPU hogs) is a step of 4 calls, not 2, on that rank;
//  - at every other phase at least half the gaps are below the threshold, in each of its 2
//    interleaved parts (twice the step has two wide phases; a period unrelated to the step mixes
//    wide and narrow gaps at every phase).
// Where extra gaps only widen gaps, the wide phase of the true step passes however many there
// are; what rejects half the step is mostly the interleaved parts.
inline bool step_at(const std::vector<int64_t>& g, std::size_t P, std::size_t per_half_phase,
                    std::size_t& phase) {
  if (P < 2 || g.size() < 2 * P * per_half_phase) return false;
  std::vector<int64_t> scratch, median(P);
  for (std::size_t o = 0; o < P; ++o) median[o] = phase_quantile(g, P, o, 0.5, scratch);
  const std::size_t o =
      static_cast<std::size_t>(std::max_element(median.begin(), median.end()) - median.begin());
  int64_t second = 0;
  for (std::size_t i = 0; i < P; ++i)
    if (i != o) second = std::max(second, median[i]);
  if (static_cast<double>(median[o]) < kMinGapJump * static_cast<double>(second)) return false;
  const double threshold = std::sqrt(static_cast<double>(median[o]) * static_cast<double>(second));
  std::size_t below[2] = {0, 0}, count[2] = {0, 0};
  for (std::size_t k = o, j = 0; k < g.size(); k += P, ++j) {
    below[j % 2] += static_cast<double>(g[k]) < threshold;
    ++count[j % 2];
  }
  for (int h = 0; h < 2; ++h)
    if (4 * below[h] > count[h]) return false;
  for (std::size_t r = 2; r <= 3; ++r) {
    const auto [lo, hi] = interleaved_range(g, P, o, r, 0.5, scratch);
    if (static_cast<double>(hi) >= kMinGapJump * static_cast<double>(lo)) return false;
  }
  for (std::size_t i = 0; i < P; ++i) {
    if (i == o) continue;
    std::size_t narrow = 0, n = 0;
    for (std::size_t k = i; k < g.size(); k += P, ++n)
      narrow += static_cast<double>(g[k]) < threshold;
    if (2 * narrow < n) return false;
    // Narrow in both its interleaved parts (the phases i and i + P of 2P): a phase whose gaps
    // alternate wide and narrow has the narrow one's (lower) median. A launch-bound job with one
    // narrow gap per step of 4 (the others 1.7 ms of kernel launches) had 2 calls taken for its
    // step on a quiet machine (1 rank of 12 in 3 runs of tiers_test's launch-bound job).
    const int64_t a = phase_quantile(g, 2 * P, i, 0.5, scratch);
    const int64_t b = phase_quantile(g, 2 * P, i + P, 0.5, scratch);
    if (static_cast<double>(std::max(a, b)) >= threshold) return false;
  }
  phase = o;
  return true;
}

// The step period among multiples of `p` (up to kMaxMultiple) that the gaps before calls
// explain: exactly one multiple P passes step_at; false if none or more than one does (the gaps
// are not clear: deciding now could differ between ranks). Gaps are looked at from index `from`
// (>= 1: gaps[0] has no call before it); `phase` is relative to `from`. `per_half_phase`: the
// gaps at each phase of twice a candidate before it may be decided (a phase mixing wide and
// narrow gaps -- half the true step -- can look wide throughout by chance with fewer).
inline bool gap_period(const std::vector<int64_t>& gaps, std::size_t from, std::size_t p,
                       std::size_t per_half_phase, std::size_t& period, std::size_t& phase) {
  const std::vector<int64_t> g = floored_gaps(gaps, std::max<std::size_t>(from, 1));
  return one_multiple(
      p, g.size(), 2 * per_half_phase,
      [&](std::size_t P, std::size_t& o) { return step_at(g, P, per_half_phase, o); }, period,
      phase);
}

// The step period among multiples of `p` whose gaps split cleanly: at one phase every gap is at
// least kCleanJump times every gap at the other phases, and those wide gaps are alike (within
// kMinGapJump: a delay before a bucket in the middle of the step -- "wide, narrow, half-wide,
// narrow" -- makes the phase of half the step wide throughout, but not alike), with only
// `per_half_phase` gaps at each phase of twice the step. A quiet machine's short job (the scenario
// tests' 16 steps of 4 buckets: 64 calls, where gap_period wants 16 per half-phase, 171 calls) has
// its steps while it runs, and its windows the steps they name; a busy machine's extra gaps (any
// one of them at another phase breaks the split) make a rank wait for gap_period instead, which
// finds the same step. Twice or half the step cannot split cleanly (two wide phases; wide and
// narrow gaps at one phase); exactly one multiple must.
inline constexpr double kCleanJump = 2.0;
inline bool clean_gap_period(const std::vector<int64_t>& gaps, std::size_t from, std::size_t p,
                             std::size_t per_half_phase, std::size_t& period, std::size_t& phase) {
  const std::vector<int64_t> g = floored_gaps(gaps, std::max<std::size_t>(from, 1));
  const auto splits = [&](std::size_t P, std::size_t& o) {
    if (P < 2) return false;
    std::vector<int64_t> lowest(P, std::numeric_limits<int64_t>::max());
    for (std::size_t k = 0; k < g.size(); ++k) lowest[k % P] = std::min(lowest[k % P], g[k]);
    o = static_cast<std::size_t>(std::max_element(lowest.begin(), lowest.end()) - lowest.begin());
    int64_t highest = 0, widest = 0;  // of the gaps at the other phases; at o
    for (std::size_t k = 0; k < g.size(); ++k) {
      int64_t& top = k % P == o ? widest : highest;
      top = std::max(top, g[k]);
    }
    return static_cast<double>(lowest[o]) >= kCleanJump * static_cast<double>(highest) &&
           static_cast<double>(widest) < kMinGapJump * static_cast<double>(lowest[o]);
  };
  return one_multiple(p, g.size(), 2 * per_half_phase, splits, period, phase);
}

// The step period among multiples of `p` that the low end of each phase's gaps tells. CPU
// contention adds to gaps (a preempted thread enters its next call late) and, where the host
// rather than the GPU paces the rank, never takes from them, so the few gaps at each phase that
// no extra gap hit keep the job's own gap while the medians drown in extra ones: fake_train's
// launch-bound job beside four busy loops on 2 cores had the 10 % quantile of the step's wide gap
// at 1.45 ms and every other phase's at 0.01-0.07 ms, their medians 3.0 and 2.1-2.5 ms (step_at
// found nothing, and no rank learned in 4,800 calls). A step of P calls here: at one phase o the
// kFloorQuantile quantile of the (raw) gaps is at least kMinFloorNs and kFloorJump times that of
// every other phase; in the 2 and 3 interleaved parts of o (its phases at 2P and 3P) it is alike
// (within kMinGapJump: a delay in the middle of a step, "wide, narrow, half-wide, narrow", makes
// the phase of half the step wide throughout but not alike) and stands out as much; and every
// other phase is as narrow in both of its interleaved parts at 2P. Half the step
// mixes the wide and a narrow phase at o (its low end is narrow), twice the step has two wide
// phases: exactly one multiple must pass. Where the GPU paces the rank a late call shortens the
// gap after it, the wide one too, and this rule rather finds nothing.
inline constexpr double kFloorQuantile = 0.1;
inline constexpr double kFloorJump = 4.0;
inline constexpr int64_t kMinFloorNs = 50'000;  // a step's own gap; launch jitter is a few us
inline bool floor_gap_period(const std::vector<int64_t>& gaps, std::size_t from, std::size_t p,
                             std::size_t per_half_phase, std::size_t& period, std::size_t& phase) {
  const std::size_t start = std::min(std::max<std::size_t>(from, 1), gaps.size());
  const std::vector<int64_t> g(gaps.begin() + static_cast<std::ptrdiff_t>(start), gaps.end());
  std::vector<int64_t> scratch, low;
  const auto stands_out = [&](std::size_t P, std::size_t& o) {
    if (P < 2) return false;
    low.assign(P, 0);
    for (std::size_t i = 0; i < P; ++i) low[i] = phase_quantile(g, P, i, kFloorQuantile, scratch);
    o = static_cast<std::size_t>(std::max_element(low.begin(), low.end()) - low.begin());
    int64_t second = 0;
    for (std::size_t i = 0; i < P; ++i)
      if (i != o) second = std::max(second, low[i]);
    const double wide_enough = kFloorJump * static_cast<double>(second);
    if (low[o] < kMinFloorNs || static_cast<double>(low[o]) < wide_enough) return false;
    // Extra gaps add to every phase alike, so the step's wide phase keeps the widest median too;
    // a phase whose low end stood out by chance (the wide gaps' low ends eaten by the lateness
    // they absorb, seeded simulations: 36 calls for 4) seldom has both.
    const int64_t median_o = phase_quantile(g, P, o, 0.5, scratch);
    for (std::size_t i = 0; i < P; ++i)
      if (i != o && phase_quantile(g, P, i, 0.5, scratch) >= median_o) return false;
    for (std::size_t r = 2; r <= 3; ++r) {
      const auto [lo, hi] = interleaved_range(g, P, o, r, kFloorQuantile, scratch);
      if (static_cast<double>(hi) >= kMinGapJump * static_cast<double>(lo) ||
          static_cast<double>(lo) < wide_enough)
        return false;
    }
    // Every other phase narrow at its low end in both its interleaved parts (its phases at
    // 2P): at half of a launch-bound step ("narrow, wide, wide, wide") the phase holding the
    // narrow gap also holds a wide one, its low end narrow only by the mix.
    for (std::size_t i = 0; i < P; ++i) {
      if (i == o) continue;
      const int64_t a = phase_quantile(g, 2 * P, i, kFloorQuantile, scratch);
      const int64_t b = phase_quantile(g, 2 * P, i + P, kFloorQuantile, scratch);
      if (kFloorJump * static_cast<double>(std::max(a, b)) > static_cast<double>(low[o]))
        return false;
    }
    return true;
  };
  // Only where twice the candidate can be looked at too: in a busy job's first steps the gap
  // before a mid-step bucket can be half-wide (ADelayInTheMiddleOfTheStep...), and half the step
  // then passes while the step itself, with too few gaps to be looked at, could not contradict
  // it (fake_train beside four busy loops: one rank of four took 2 calls for its step of 4 at
  // 192 calls, and the job took it from that rank).
  return one_multiple(p, g.size(), 4 * per_half_phase, stands_out, period, phase);
}

// True when the gaps from `from` on show no step of 2..max_period calls: at each such period,
// the lower quartiles of the gaps at its phases are within kFlatJump of each other (random extra
// gaps move a lower quartile only where 3/4 of a phase's gaps have one, and the wide phase of a
// step keeps it wide), and above the floor of floored_gaps. False also when there are fewer than
// `per_phase` gaps per phase for any of those periods.
inline bool gaps_flat(const std::vector<int64_t>& gaps, std::size_t from, std::size_t max_period,
                      std::size_t per_phase) {
  const std::vector<int64_t> g = floored_gaps(gaps, std::max<std::size_t>(from, 1));
  if (max_period < 2 || g.size() < max_period * per_phase) return false;
  const int64_t floor = gap_floor(g);  // flooring leaves the 90 % quantile as it was
  std::vector<int64_t> scratch;
  for (std::size_t P = 2; P <= max_period; ++P) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (std::size_t o = 0; o < P; ++o) {
      const int64_t q = phase_quantile(g, P, o, 0.25, scratch);
      lo = std::min(lo, q);
      hi = std::max(hi, q);
    }
    if (static_cast<double>(hi) >= kFlatJump * static_cast<double>(lo)) return false;
    // At the floor: the low ends are gone (a rank paced by the GPU whose calls are mostly late:
    // each late call shortens the gap after it to nothing at every phase) -- no information,
    // not one collective per step.
    if (lo <= floor) return false;
  }
  return true;
}

}  // namespace ncclwatch::step_gaps

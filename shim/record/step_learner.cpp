#include "record/step_learner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ncclwatch::shim {
namespace {

constexpr double kAgreement = 0.97;
constexpr int64_t kGapFloorNs = 1000;  // gaps below are "back to back"
constexpr double kMinGapJump = 1.5;    // wide gaps are at least this much wider than narrow ones
// Gaps at the phases of a period are alike (no step there) within this factor: below
// kMinGapJump, so that a step too faint to be learned from (wide gaps 1.2-1.5x the narrow ones)
// is not taken for one collective per step either.
constexpr double kFlatJump = 1.2;

// The gaps from `from` on (index 0 = gaps[from]), with those far below the wide ones floored:
// launch jitter (1 us vs 7 us is a big ratio) is no step structure.
std::vector<int64_t> floored_gaps(const std::vector<int64_t>& gaps, std::size_t from) {
  std::vector<int64_t> g(gaps.begin() + static_cast<std::ptrdiff_t>(std::min(from, gaps.size())),
                         gaps.end());
  if (g.empty()) return g;
  std::vector<int64_t> sorted = g;
  const auto q90 =
      sorted.begin() + static_cast<std::ptrdiff_t>(0.9 * static_cast<double>(sorted.size() - 1));
  std::nth_element(sorted.begin(), q90, sorted.end());
  const int64_t floor = std::max(kGapFloorNs, *q90 / 20);
  for (int64_t& x : g) x = std::max(x, floor);
  return g;
}

// The q-quantile (lower) of the gaps g[o], g[o + P], ...; `scratch` is reused.
int64_t phase_quantile(const std::vector<int64_t>& g, std::size_t P, std::size_t o, double q,
                       std::vector<int64_t>& scratch) {
  scratch.clear();
  for (std::size_t k = o; k < g.size(); k += P) scratch.push_back(g[k]);
  if (scratch.empty()) return 0;
  const auto at =
      scratch.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(scratch.size() - 1));
  std::nth_element(scratch.begin(), at, scratch.end());
  return *at;
}

// Is P calls a step of the gaps g, starting at phase o? Robust statistics rather than counts
// of threshold crossings, because a busy machine adds gaps of 0.1-20 ms (a preempted thread) to
// a sizeable fraction of the calls at any phase:
//  - the median gap at o is kMinGapJump times the largest median at the other phases (a random
//    extra gap shifts a median only where half the gaps of that phase have one);
//  - most gaps at o (3/4) are above the threshold between the two, in each half of them (the
//    phases o and o + P of twice the step): at half the true step, phase o holds the step's
//    wide gaps and as many narrow ones. Not all: where the GPU paces the rank (the wide gap is
//    a wait for the previous step), a late call before it shortens it (1 ms steps of
//    fake_train beside CPU hogs: 15 % of the wide gaps below the threshold);
//  - at every other phase at least half the gaps are below it (twice the step has two wide
//    phases; a period unrelated to the step mixes wide and narrow gaps at every phase).
// Where extra gaps only widen gaps, the wide phase of the true step passes however many there
// are; what rejects half the step is mostly the last rule of step_at (its parts).
bool step_at(const std::vector<int64_t>& g, std::size_t P, std::size_t per_half_phase,
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
  // The step phase is alike throughout: in 2 or 3 interleaved parts (the phases o, o + P, ... of
  // 2P or 3P) its median gaps are within kMinGapJump of each other. A pattern of gaps "wide,
  // narrow, half-wide, narrow" (the rank's own delay before one bucket in the middle of a step,
  // seen under fake_train beside CPU hogs) is a step of 4 calls, not 2, on that rank; taking 2
  // would differ from the ranks without that delay.
  for (std::size_t r = 2; r <= 3; ++r) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (std::size_t part = 0; part < r; ++part) {
      const int64_t m = phase_quantile(g, r * P, o + part * P, 0.5, scratch);
      lo = std::min(lo, m);
      hi = std::max(hi, m);
    }
    if (static_cast<double>(hi) >= kMinGapJump * static_cast<double>(lo)) return false;
  }
  for (std::size_t i = 0; i < P; ++i) {
    if (i == o) continue;
    std::size_t narrow = 0, n = 0;
    for (std::size_t k = i; k < g.size(); k += P, ++n)
      narrow += static_cast<double>(g[k]) < threshold;
    if (2 * narrow < n) return false;
  }
  phase = o;
  return true;
}

std::size_t widest_gap_phase(const std::vector<int64_t>& gaps, std::size_t from, std::size_t p) {
  std::size_t phase = 0;
  double best = -1;
  for (std::size_t o = 0; o < p; ++o) {
    double sum = 0;
    std::size_t n = 0;
    for (std::size_t i = from + o; i < gaps.size(); i += p) {
      if (i == 0) continue;
      sum += static_cast<double>(gaps[i]);
      ++n;
    }
    if (n > 0 && sum / static_cast<double>(n) > best) {
      best = sum / static_cast<double>(n);
      phase = o;
    }
  }
  return phase;
}

}  // namespace

std::size_t StepLearner::token_period(const std::vector<uint64_t>& tokens, std::size_t from) {
  if (tokens.size() <= from) return 0;
  const std::size_t n = tokens.size() - from;
  for (std::size_t p = 1; 3 * p <= n; ++p) {
    std::size_t agree = 0;
    for (std::size_t i = from + p; i < tokens.size(); ++i) agree += tokens[i] == tokens[i - p];
    if (static_cast<double>(agree) >= kAgreement * static_cast<double>(n - p)) return p;
  }
  return 0;
}

bool StepLearner::gap_period(const std::vector<int64_t>& gaps, std::size_t from, std::size_t p,
                             std::size_t per_half_phase, std::size_t& period, std::size_t& phase) {
  if (p == 0) return false;
  const std::vector<int64_t> g = floored_gaps(gaps, std::max<std::size_t>(from, 1));
  bool found = false;
  for (std::size_t m = 1; m <= kMaxMultiple && 2 * m * p * per_half_phase <= g.size(); ++m) {
    std::size_t o = 0;
    if (!step_at(g, m * p, per_half_phase, o)) continue;
    // Two candidates: the gaps are not clear (the rules above leave one for any clear step);
    // deciding now could differ between ranks.
    if (found) return false;
    found = true;
    period = m * p;
    phase = o;
  }
  return found;
}

bool StepLearner::gaps_flat(const std::vector<int64_t>& gaps, std::size_t from,
                            std::size_t max_period, std::size_t per_phase) {
  const std::vector<int64_t> g = floored_gaps(gaps, std::max<std::size_t>(from, 1));
  if (max_period < 2 || g.size() < max_period * per_phase) return false;
  std::vector<int64_t> scratch;
  for (std::size_t P = 2; P <= max_period; ++P) {
    // The lower quartile: random extra gaps move it only where 3/4 of a phase's gaps have one,
    // and the wide phase of a step keeps it wide.
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (std::size_t o = 0; o < P; ++o) {
      const int64_t q = phase_quantile(g, P, o, 0.25, scratch);
      lo = std::min(lo, q);
      hi = std::max(hi, q);
    }
    if (static_cast<double>(hi) >= kFlatJump * static_cast<double>(lo)) return false;
  }
  return true;
}

void StepLearner::reset() {
  calls_.clear();
  next_try_ = 24;
  seen_ = 0;
  gaps_unclear_ = false;
  state_ = State::kLearning;
  pattern_ = {};
}

StepLearner::State StepLearner::add(const Call& call) {
  if (state_ != State::kLearning) return state_;
  calls_.push_back(call);
  ++seen_;
  if (calls_.size() < next_try_) return state_;
  next_try_ = std::min(2 * next_try_, kMaxCalls);
  if (learn(false)) {
    state_ = State::kLearned;
    calls_ = {};
  } else if (calls_.size() >= kMaxCalls) {
    if (!gaps_unclear_ || seen_ >= kMaxUnclearCalls) {
      state_ = State::kFailed;
      calls_ = {};
    } else {
      // Equal collectives whose gaps are not clear yet: contention comes and goes (fake_train
      // beside CPU hogs: the step hidden for 3,000 calls, plain for the next 4,500), so look
      // again at the newest kMaxCalls calls every quarter of them.
      calls_.erase(calls_.begin(), calls_.begin() + static_cast<std::ptrdiff_t>(kMaxCalls / 4));
    }
  }
  return state_;
}

StepLearner::State StepLearner::conclude() {
  if (state_ == State::kLearning && calls_.size() >= 4 && learn(true)) {
    state_ = State::kLearned;
    calls_ = {};
  }
  return state_;
}

bool StepLearner::learn(bool at_end) {
  // Calls come in the order their records were drained; a step is counted in seq order.
  std::vector<Call> c = calls_;
  std::sort(c.begin(), c.end(), [](const Call& a, const Call& b) { return a.seq < b.seq; });
  std::vector<uint64_t> tokens;
  std::vector<int64_t> gaps;
  tokens.reserve(c.size());
  gaps.reserve(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    tokens.push_back(c[i].token);
    gaps.push_back(i == 0 ? 0 : std::max<int64_t>(c[i].enter_ns - c[i - 1].enter_ns, 0));
  }
  // The first quarter (initial broadcasts, warm-up steps) is left out of the search.
  const std::size_t from = std::max<std::size_t>(c.size() / 4, 1);
  const std::size_t p = token_period(tokens, from);
  if (p == 0) return false;
  std::size_t period = p, phase = 0;
  gaps_unclear_ = false;
  const std::size_t per_half_phase = at_end ? kGapsPerHalfPhaseAtEnd : kGapsPerHalfPhase;
  if (!gap_period(gaps, from, p, per_half_phase, period, phase)) {
    period = p;
    if (p == 1) {
      // Every call alike and no step in the gaps: one collective per step only when the gaps
      // are flat at every candidate step (else the step is there, not yet clear: wait, and give
      // up at kMaxUnclearCalls rather than make every bucket a step). At the end of a run, with
      // what gaps there are.
      const std::size_t max_period =
          at_end ? std::min(kMaxMultiple, (gaps.size() - from) / kFlatGapsPerPhase) : kMaxMultiple;
      if (!gaps_flat(gaps, from, max_period, kFlatGapsPerPhase)) {
        gaps_unclear_ = true;
        return false;
      }
    } else {
      // Distinct collectives: the tokens say the step; the gaps only place its start.
      phase = widest_gap_phase(gaps, from, p);
    }
  }
  if (period > std::numeric_limits<uint32_t>::max()) return false;
  const Call& first = c[from + phase];
  pattern_.period = static_cast<uint32_t>(period);
  pattern_.phase = static_cast<uint32_t>(first.seq % period);
  pattern_.start_token = first.token;
  return true;
}

}  // namespace ncclwatch::shim

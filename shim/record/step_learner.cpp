#include "record/step_learner.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ncclwatch::shim {
namespace {

constexpr double kAgreement = 0.97;
constexpr int64_t kGapFloorNs = 1000;  // gaps below are "back to back"
constexpr double kMinGapJump = 1.5;    // wide gaps are at least this much wider than narrow ones
constexpr std::size_t kMaxMultiple = 64;

// Does period P (phase o relative to `from`) explain the gaps: at least 3/4 of the gaps before
// phase-o calls are >= threshold, at most 1/4 of the others are?
bool explains(const std::vector<int64_t>& gaps, std::size_t from, std::size_t P, int64_t threshold,
              std::size_t& phase) {
  std::vector<std::size_t> wide(P, 0), count(P, 0);
  std::size_t wide_total = 0, total = 0;
  for (std::size_t i = std::max<std::size_t>(from, 1); i < gaps.size(); ++i) {
    const std::size_t o = (i - from) % P;
    const bool is_wide = gaps[i] >= threshold;
    wide[o] += is_wide;
    ++count[o];
    wide_total += is_wide;
    ++total;
  }
  std::size_t best = 0;
  for (std::size_t o = 1; o < P; ++o)
    if (wide[o] > wide[best]) best = o;
  if (count[best] == 0 || 4 * wide[best] < 3 * count[best]) return false;
  const std::size_t other_wide = wide_total - wide[best], others = total - count[best];
  if (4 * other_wide > others) return false;
  phase = best;
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
                             std::size_t& period, std::size_t& phase) {
  std::vector<int64_t> sorted;
  for (std::size_t i = std::max<std::size_t>(from, 1); i < gaps.size(); ++i)
    sorted.push_back(gaps[i]);
  if (sorted.size() < 4 || p == 0) return false;
  // Launch jitter far below the wide gaps (1 us vs 7 us is a big ratio) is no step structure.
  const auto q90 =
      sorted.begin() + static_cast<std::ptrdiff_t>(0.9 * static_cast<double>(sorted.size() - 1));
  std::nth_element(sorted.begin(), q90, sorted.end());
  const int64_t floor = std::max(kGapFloorNs, *q90 / 20);
  for (int64_t& g : sorted) g = std::max(g, floor);
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<double, int64_t>> cuts;  // (ratio, threshold between narrow and wide)
  for (std::size_t j = 0; j + 1 < sorted.size(); ++j) {
    const double ratio = static_cast<double>(sorted[j + 1]) / static_cast<double>(sorted[j]);
    if (ratio >= kMinGapJump)
      cuts.emplace_back(ratio, static_cast<int64_t>(std::sqrt(static_cast<double>(sorted[j]) *
                                                              static_cast<double>(sorted[j + 1]))));
  }
  std::sort(cuts.begin(), cuts.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  const std::size_t n = gaps.size() - from;
  for (std::size_t c = 0; c < cuts.size() && c < 8; ++c) {
    // The typical spacing of wide gaps, rounded to a multiple of p; neighbours tried too.
    std::vector<std::size_t> spacing;
    std::size_t prev = 0;
    for (std::size_t i = std::max<std::size_t>(from, 1); i < gaps.size(); ++i) {
      if (gaps[i] < cuts[c].second) continue;
      if (prev != 0) spacing.push_back(i - prev);
      prev = i;
    }
    if (spacing.empty()) continue;
    const auto mid = spacing.begin() + static_cast<std::ptrdiff_t>(spacing.size() / 2);
    std::nth_element(spacing.begin(), mid, spacing.end());
    const std::size_t m = std::max<std::size_t>(1, (*mid + p / 2) / p);
    for (std::size_t mm : {m, m - 1, m + 1}) {
      // One call per step "explains" any cut: no evidence of a step.
      if (mm == 0 || mm > kMaxMultiple || mm * p < 2 || 3 * mm * p > n) continue;
      if (explains(gaps, from, mm * p, cuts[c].second, phase)) {
        period = mm * p;
        return true;
      }
    }
  }
  return false;
}

void StepLearner::reset() {
  calls_.clear();
  next_try_ = 24;
  state_ = State::kLearning;
  pattern_ = {};
}

StepLearner::State StepLearner::add(const Call& call) {
  if (state_ != State::kLearning) return state_;
  calls_.push_back(call);
  if (calls_.size() >= next_try_) {
    next_try_ *= 2;
    if (learn(calls_.size() >= kConfirmCalls)) {
      state_ = State::kLearned;
      calls_ = {};
    } else if (calls_.size() >= kMaxCalls) {
      state_ = State::kFailed;
      calls_ = {};
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

bool StepLearner::learn(bool unconfirmed_ok) {
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
  const std::size_t from = c.size() / 4;
  const std::size_t p = token_period(tokens, from);
  if (p == 0) return false;
  std::size_t period = p, phase = 0;
  if (!gap_period(gaps, from, p, period, phase)) {
    // Every call alike and no gap confirms a step: wait for more steps (see kConfirmCalls).
    if (p == 1 && !unconfirmed_ok) return false;
    period = p;
    phase = widest_gap_phase(gaps, from, p);
  }
  if (period > std::numeric_limits<uint32_t>::max()) return false;
  const Call& first = c[from + phase];
  pattern_.period = static_cast<uint32_t>(period);
  pattern_.phase = static_cast<uint32_t>(first.seq % period);
  pattern_.start_token = first.token;
  return true;
}

}  // namespace ncclwatch::shim

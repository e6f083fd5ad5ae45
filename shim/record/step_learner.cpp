#include "record/step_learner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ncclwatch/step_gaps.h"

namespace ncclwatch::shim {
namespace {

constexpr double kAgreement = 0.97;

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
  return step_gaps::gap_period(gaps, from, p, per_half_phase, period, phase);
}

bool StepLearner::gaps_flat(const std::vector<int64_t>& gaps, std::size_t from,
                            std::size_t max_period, std::size_t per_phase) {
  return step_gaps::gaps_flat(gaps, from, max_period, per_phase);
}

void StepLearner::reset() {
  calls_.clear();
  next_try_ = 24;
  seen_ = 0;
  gaps_unclear_ = false;
  adopted_ = false;
  state_ = State::kLearning;
  pattern_ = {};
}

bool StepLearner::adopt(const StepPattern& pattern) {
  if (state_ == State::kLearned || pattern.period == 0 || pattern.phase >= pattern.period)
    return false;
  std::size_t at_phase = 0, other = 0;
  for (std::size_t i = calls_.size() / 4; i < calls_.size(); ++i) {
    const Call& c = calls_[i];
    if (c.seq < pattern.phase || (c.seq - pattern.phase) % pattern.period != 0) continue;
    ++at_phase;
    other += c.token != pattern.start_token;
  }
  if (static_cast<double>(other) > (1 - kAgreement) * static_cast<double>(at_phase)) return false;
  pattern_ = pattern;
  state_ = State::kLearned;
  adopted_ = true;
  calls_ = {};
  return true;
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
  if (!gap_period(gaps, from, p, per_half_phase, period, phase) &&
      !step_gaps::clean_gap_period(gaps, from, p, kCleanGapsPerHalfPhase, period, phase) &&
      !step_gaps::floor_gap_period(gaps, from, p, 2 * per_half_phase, period, phase)) {
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

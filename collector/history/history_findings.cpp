#include "history/history_findings.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "model/median.h"

namespace ncclwatch::history {
namespace {

struct Part {
  const char* name;
  double Period::*figure;
};
constexpr Part kParts[] = {{"compute", &Period::compute_ms},
                           {"exposed communication", &Period::exposed_ms},
                           {"waiting for peers", &Period::wait_ms},
                           {"idle", &Period::idle_ms}};

// Step-weighted mean of one figure over periods [a, b] where it is known; NaN if nowhere.
double mean_over(const std::vector<Period>& ps, std::size_t a, std::size_t b, double Period::*f,
                 const std::vector<bool>* only = nullptr) {
  double sum = 0, n = 0;
  for (std::size_t i = a; i <= b; ++i) {
    if (ps[i].*f < 0 || (only != nullptr && !(*only)[i])) continue;
    sum += ps[i].*f * static_cast<double>(ps[i].steps);
    n += static_cast<double>(ps[i].steps);
  }
  return n > 0 ? sum / n : NAN;
}

// Which part of the step grew most from the normal periods to [a, b].
void explain(const std::vector<Period>& ps, const std::vector<bool>& normal, Regression& g) {
  for (const Part& part : kParts) {
    const double before = mean_over(ps, 0, ps.size() - 1, part.figure, &normal);
    const double during = mean_over(ps, g.first_period, g.last_period, part.figure);
    if (std::isnan(before) || std::isnan(during)) continue;
    if (during - before > g.grew_ms) {
      g.grew_ms = during - before;
      g.grew = part.name;
    }
  }
}

}  // namespace

std::vector<bool> captured_periods(const std::vector<Period>& ps) {
  bool plain = false;  // some period mostly outside every window
  for (const Period& p : ps) plain = plain || 2 * p.detail_steps < p.steps;
  std::vector<bool> out(ps.size(), false);
  if (!plain) return out;  // the whole run in detail: its cost is everywhere alike
  for (std::size_t i = 0; i < ps.size(); ++i) out[i] = 2 * ps[i].detail_steps >= ps[i].steps;
  return out;
}

std::vector<Regression> find_regressions(const std::vector<Period>& ps) {
  std::vector<Regression> out;
  if (ps.size() < 3) return out;
  const std::vector<bool> captured = captured_periods(ps);
  std::vector<double> v;
  for (std::size_t i = 1; i < ps.size(); ++i)
    if (!captured[i]) v.push_back(ps[i].step_ms);
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  const double base = v[v.size() / 4];
  if (base <= 0) return out;
  const double limit = base * kRegressionRatio;
  // normal: not regressed (a captured period never is); usual: what the baseline is made of.
  std::vector<bool> normal(ps.size()), usual(ps.size());
  for (std::size_t i = 1; i < ps.size(); ++i) {
    normal[i] = captured[i] || ps[i].step_ms <= limit;
    usual[i] = !captured[i] && ps[i].step_ms <= limit;
  }
  for (std::size_t i = 1; i < ps.size();) {
    if (normal[i]) {
      ++i;
      continue;
    }
    std::size_t j = i;
    uint64_t steps = 0;
    while (j < ps.size() && !normal[j]) steps += ps[j++].steps;
    const bool at_end = j == ps.size();
    if (steps >= kMinRegressionSteps && (j - i >= 2 || at_end)) {
      Regression g;
      g.first_period = i;
      g.last_period = j - 1;
      g.first_step = ps[i].first_step;
      g.last_step = ps[j - 1].last_step;
      g.start_wall_ns = ps[i].start_wall_ns;
      g.end_wall_ns = ps[j - 1].end_wall_ns;
      g.baseline_ms = base;
      g.step_ms = mean_over(ps, i, j - 1, &Period::step_ms);
      g.until_end = at_end;
      explain(ps, usual, g);
      out.push_back(g);
    }
    i = j;
  }
  return out;
}

namespace {

// Whether rank r is late in period p (see kLateShare).
bool late_in(const Period& p, std::size_t r, std::vector<double>& scratch) {
  const RankPeriod& me = p.ranks[r];
  if (me.late_steps == 0) return false;
  const double late = me.late_ms;
  if (late < std::max(kLateShare * p.step_ms, kLateFloorMs)) return false;
  scratch.clear();
  for (std::size_t q = 0; q < p.ranks.size(); ++q)
    if (q != r && p.ranks[q].late_steps > 0) scratch.push_back(std::abs(p.ranks[q].late_ms));
  if (scratch.empty()) return false;
  // Two ranks are each as far from their median: only the share of the step decides.
  if (scratch.size() < 2) return true;
  return late >= kLateOverPeers * model::median_in_place(std::span<double>(scratch));
}

// Rank r's excess of one GPU figure over its peers' median across periods [a, b], step-weighted;
// -1 when unknown anywhere.
double excess(const std::vector<Period>& ps, std::size_t r, std::size_t a, std::size_t b,
              float RankPeriod::*f, std::vector<double>& scratch) {
  double sum = 0, n = 0;
  for (std::size_t i = a; i <= b; ++i) {
    const Period& p = ps[i];
    if (p.ranks[r].*f < 0) return -1;
    scratch.clear();
    for (std::size_t q = 0; q < p.ranks.size(); ++q)
      if (q != r && p.ranks[q].steps > 0 && p.ranks[q].*f >= 0) scratch.push_back(p.ranks[q].*f);
    if (scratch.empty()) return -1;
    const double w = static_cast<double>(p.ranks[r].steps);
    sum += (p.ranks[r].*f - model::median_in_place(std::span<double>(scratch))) * w;
    n += w;
  }
  return n > 0 ? sum / n : -1;
}

}  // namespace

std::vector<SlowRank> find_slow_ranks(const std::vector<Period>& ps, format::StepTiming timing) {
  std::vector<SlowRank> out;
  if (ps.empty()) return out;
  const std::size_t ranks = ps.front().ranks.size();
  std::vector<double> scratch;
  for (std::size_t r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < ps.size();) {
      if (!late_in(ps[i], r, scratch)) {
        ++i;
        continue;
      }
      std::size_t j = i;
      double late = 0, step = 0, n = 0;
      for (;;) {
        while (j < ps.size() && late_in(ps[j], r, scratch)) {
          const double w = static_cast<double>(ps[j].ranks[r].late_steps);
          late += ps[j].ranks[r].late_ms * w;
          step += ps[j].step_ms * w;
          n += w;
          ++j;
        }
        // A short pause (fewer than kMaxSlowGap periods) does not end the span.
        std::size_t k = j;
        while (k < ps.size() && k - j < kMaxSlowGap && !late_in(ps[k], r, scratch)) ++k;
        if (k == j || k >= ps.size() || k - j >= kMaxSlowGap) break;
        j = k;
      }
      uint64_t steps = 0;
      for (std::size_t k = i; k < j; ++k) steps += ps[k].ranks[r].late_steps;
      if (steps < kMinSlowSteps) {
        i = j;
        continue;
      }
      SlowRank s;
      s.rank = r;
      s.first_period = i;
      s.last_period = j - 1;
      s.first_step = ps[i].first_step;
      s.last_step = ps[j - 1].last_step;
      s.start_wall_ns = ps[i].start_wall_ns;
      s.end_wall_ns = ps[j - 1].end_wall_ns;
      s.late_ms = late / n;
      s.step_ms = step / n;
      if (timing != format::StepTiming::kNone) {
        s.compute_excess_ms = excess(ps, r, i, j - 1, &RankPeriod::compute_ms, scratch);
        s.idle_excess_ms = excess(ps, r, i, j - 1, &RankPeriod::idle_ms, scratch);
      }
      if (s.compute_excess_ms >= 0.5 * s.late_ms) {
        s.cause = analysis::Cause::kGpuSlow;
      } else if (s.idle_excess_ms >= 0.5 * s.late_ms) {
        s.cause = analysis::Cause::kHostStall;
      }
      out.push_back(s);
      i = j;
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SlowRank& a, const SlowRank& b) {
    return a.first_step < b.first_step;
  });
  return out;
}

void link_regressions(History& h) {
  for (Regression& g : h.regressions) {
    uint64_t best = 0;
    for (std::size_t i = 0; i < h.slow_ranks.size(); ++i) {
      const SlowRank& s = h.slow_ranks[i];
      const uint64_t a = std::max(g.first_step, s.first_step);
      const uint64_t b = std::min(g.last_step, s.last_step);
      if (a > b || b - a + 1 <= best) continue;
      best = b - a + 1;
      g.late_rank = i;
    }
  }
}

}  // namespace ncclwatch::history

#include "analysis/step_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "model/median.h"
#include "ncclwatch/step_gaps.h"

namespace ncclwatch::analysis {
namespace {

// Period search looks at this many calls: enough for thousands of buckets per step, and it
// keeps the O(window x period) scan well under a millisecond.
constexpr std::size_t kPeriodWindow = 4096;
constexpr double kPeriodAgreement = 0.97;

std::string lower(const std::string& s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int64_t call_end(const model::CallEvent& c) {
  return c.has_gpu() ? c.gpu_end_ns : c.exit_ns;
}
int64_t call_start(const model::CallEvent& c) {
  return c.has_gpu() ? c.gpu_start_ns : c.enter_ns;
}

using step_gaps::kGapFloorNs;
using step_gaps::kMinGapJump;

// The step as the shim's learner finds it (ncclwatch/step_gaps.h: robust statistics of the gaps
// at each phase, exactly one multiple of the token period passing), on the window the period
// search looks at: 16 gaps per half-phase, else (a short trace) 4, as the learner at a run's end.
// Tried before the rules below, which count threshold crossings and, beside CPU hogs, took 1 or
// 2 calls per step where the step was 4 (and differently on each rank).
bool robust_step_period(const std::vector<int64_t>& gaps, std::size_t w, std::size_t p,
                        std::size_t& period, std::size_t& phase) {
  const std::size_t from = std::max<std::size_t>(w, 1);
  const std::vector<int64_t> window(
      gaps.begin(),
      gaps.begin() + static_cast<std::ptrdiff_t>(std::min(gaps.size(), from + kPeriodWindow)));
  if (!step_gaps::gap_period(window, from, p, 16, period, phase) &&
      !step_gaps::gap_period(window, from, p, 4, period, phase))
    return false;
  phase = (from - w + phase) % period;  // relative to w, as the rules below give it
  return true;
}

// Does step period P (phase o) explain the gaps: at least 3/4 of the gaps before phase-o
// calls are wide (>= threshold), at most 1/4 of the others are?
bool explains(const std::vector<int64_t>& gaps, std::size_t w, std::size_t end, std::size_t P,
              int64_t threshold, std::size_t& phase) {
  std::vector<std::size_t> wide(P, 0), count(P, 0);
  std::size_t wide_total = 0, total = 0;
  for (std::size_t i = std::max<std::size_t>(w, 1); i < end; ++i) {
    const std::size_t o = (i - w) % P;
    const bool is_wide = gaps[i] >= threshold;
    wide[o] += is_wide;
    ++count[o];
    wide_total += is_wide;
    ++total;
  }
  std::size_t best = 0;
  for (std::size_t o = 1; o < P; ++o) {
    if (wide[o] > wide[best]) best = o;
  }
  if (count[best] == 0 || 4 * wide[best] < 3 * count[best]) return false;
  const std::size_t other_wide = wide_total - wide[best], others = total - count[best];
  if (4 * other_wide > others) return false;
  phase = best;
  return true;
}

// The step period among multiples P = m x p of the token period: gaps between calls split
// into narrow (within a step) and wide (the forward pass, where no gradient is ready) at one
// of the largest ratio jumps of their sorted values; P is the typical spacing of the wide gaps
// when the phase structure confirms it. Looks at the same window as the period search.
bool choose_step_period(const std::vector<int64_t>& gaps, std::size_t w, std::size_t p,
                        std::size_t& period, std::size_t& phase) {
  const std::size_t end = std::min(gaps.size(), w + kPeriodWindow);
  if (end <= w + 1) return false;
  std::vector<int64_t> sorted;
  for (std::size_t i = std::max<std::size_t>(w, 1); i < end; ++i) sorted.push_back(gaps[i]);
  // Gaps far below the wide ones are all "back to back": flooring them keeps launch jitter
  // (1 µs vs 7 µs is a big ratio) from posing as the step structure.
  const auto q90 =
      sorted.begin() + static_cast<std::ptrdiff_t>(0.9 * static_cast<double>(sorted.size() - 1));
  std::nth_element(sorted.begin(), q90, sorted.end());
  const int64_t floor = std::max(kGapFloorNs, *q90 / 20);
  for (int64_t& g : sorted) g = std::max(g, floor);
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<double, int64_t>> cuts;  // (ratio, threshold)
  for (std::size_t j = 0; j + 1 < sorted.size(); ++j) {
    const double ratio = static_cast<double>(sorted[j + 1]) / static_cast<double>(sorted[j]);
    if (ratio >= kMinGapJump) {
      cuts.emplace_back(ratio, static_cast<int64_t>(std::sqrt(static_cast<double>(sorted[j]) *
                                                              static_cast<double>(sorted[j + 1]))));
    }
  }
  std::sort(cuts.begin(), cuts.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::size_t> spacing;
  for (std::size_t c = 0; c < cuts.size() && c < 8; ++c) {
    // The step is the typical spacing of wide gaps, rounded to a multiple of the token
    // period; its neighbours are tried too (one wide gap lost to jitter shifts the median).
    spacing.clear();
    std::size_t prev = 0;
    for (std::size_t i = std::max<std::size_t>(w, 1); i < end; ++i) {
      if (gaps[i] < cuts[c].second) continue;
      if (prev) spacing.push_back(i - prev);
      prev = i;
    }
    std::vector<std::size_t> tries;
    if (spacing.empty()) {
      // At most one wide gap in the window (a short trace): every multiple is cheap to try.
      for (std::size_t mm = 1; mm <= 64; ++mm) tries.push_back(mm);
    } else {
      const auto mid = spacing.begin() + static_cast<std::ptrdiff_t>(spacing.size() / 2);
      std::nth_element(spacing.begin(), mid, spacing.end());
      const std::size_t m = std::max<std::size_t>(1, (*mid + p / 2) / p);
      tries = {m, m - 1, m + 1};
    }
    for (std::size_t mm : tries) {
      // One call per step "explains" any cut with 3/4 of the gaps wide (there is no other
      // phase to be narrow): no evidence of a step. Under CPU contention a late call entry
      // shortens the gap after it and a cut below the narrow gaps did exactly that.
      if (mm == 0 || mm > 64 || mm * p < 2 || 2 * mm * p > end - w) continue;
      if (explains(gaps, w, end, mm * p, cuts[c].second, phase)) {
        period = mm * p;
        return true;
      }
    }
  }
  return false;
}

// The step period as the period of the gap sequence, for when no single jump splits the gaps
// into "one wide gap per step" and the rest (choose_step_period fails): a peer late at the
// first bucket's all-reduce makes the next call of every other rank wait about as long as the
// forward pass — two wide gaps of different widths per step — and host-side noise (CPU
// contention: call entries late by up to 10% of a step) blurs the jumps. The gaps still repeat
// with the step: among the multiples P = m x p of the token period, the one whose phase
// medians predict the gaps best. Prediction error is cross-validated (each gap against the
// median of the other gaps at its phase), so a multiple of the step, with fewer gaps per
// phase, does not win by fitting noise (not by much: the smallest P near the best is taken),
// and only when it predicts the gaps at least twice as well as the token period p itself —
// otherwise the gaps have no step structure to go by and p stands.
bool step_period_from_gap_pattern(const std::vector<int64_t>& gaps, std::size_t w, std::size_t p,
                                  std::size_t& period) {
  // 1024 gaps: 16+ per phase for 64 calls per step, and bounded work (up to 64 sorts of the
  // window) on a rank whose gaps have no structure at all.
  const std::size_t begin = std::max<std::size_t>(w, 1);
  const std::size_t end = std::min(gaps.size(), begin + 1024);
  if (p == 0 || end <= begin) return false;
  const std::size_t n = end - begin;
  constexpr std::size_t kMinPerPhase = 5;  // gaps per phase for a usable median
  std::vector<int64_t> v;
  auto error_of = [&](std::size_t P) {
    double sum = 0;
    for (std::size_t o = 0; o < P; ++o) {
      v.clear();
      for (std::size_t i = begin + o; i < end; i += P) v.push_back(gaps[i]);
      std::sort(v.begin(), v.end());
      // Leave-one-out lower median of the k - 1 others: index m of them is v[m + 1] when the
      // left-out gap sits at or below m, else v[m].
      const std::size_t k = v.size(), m = (k - 2) / 2;
      for (std::size_t j = 0; j < k; ++j) {
        const int64_t med = j <= m ? v[m + 1] : v[m];
        sum += std::abs(static_cast<double>(v[j]) - static_cast<double>(med));
      }
    }
    return sum;
  };
  std::vector<std::pair<std::size_t, double>> errors;  // (P, error), P ascending
  for (std::size_t mm = 1; mm <= 64 && mm * p * kMinPerPhase <= n; ++mm)
    errors.emplace_back(mm * p, error_of(mm * p));
  if (errors.size() < 2) return false;
  const double none = errors.front().second;  // the token period's: no step structure used
  double best = none;
  for (const auto& e : errors) best = std::min(best, e.second);
  // The smallest P closer to the best than to `none` on a log scale: the step structure cuts
  // the error by a large factor (20x on a DDP job under contention), a multiple of the step
  // only by chance (up to ~10-20%: fewer gaps per phase, and heavy-tailed delays).
  const double good = std::sqrt(none * best);
  for (const auto& e : errors) {
    if (e.second <= good) {
      if (e.first == p || 2 * e.second > none) return false;
      period = e.first;
      return true;
    }
  }
  return false;
}

// Is `d` calls a step of these gaps: one phase holds the widest gap of at least 3/4 of the
// runs of d consecutive gaps, and that gap is kMinGapJump times all the others of its run in at
// least half of them? The forward pass makes each step's widest gap; a stall every Nth step
// widens other gaps of those steps (every rank waits for the staller), hence "at least half".
bool widest_gap_recurs(const std::vector<int64_t>& gaps, std::size_t w, std::size_t d) {
  const std::size_t begin = std::max<std::size_t>(w, 1);
  const std::size_t end = std::min(gaps.size(), begin + 1024);
  if (d < 2 || end < begin + 4 * d) return false;
  std::vector<std::size_t> widest(d, 0), apart(d, 0);
  std::size_t runs = 0;
  for (std::size_t b = begin; b + d <= end; b += d, ++runs) {
    std::size_t top = b;
    int64_t second = std::numeric_limits<int64_t>::min();
    for (std::size_t i = b + 1; i < b + d; ++i) {
      if (gaps[i] > gaps[top]) {
        second = gaps[top];
        top = i;
      } else {
        second = std::max(second, gaps[i]);
      }
    }
    const std::size_t o = (top - w) % d;
    ++widest[o];
    apart[o] += static_cast<double>(gaps[top]) >=
                kMinGapJump * static_cast<double>(std::max(second, kGapFloorNs));
  }
  const std::size_t o =
      static_cast<std::size_t>(std::max_element(widest.begin(), widest.end()) - widest.begin());
  return 4 * widest[o] >= 3 * runs && 2 * apart[o] >= runs;
}

// The gap pattern's period P (a multiple of the token period p) may be several steps: a rank
// stalling before every Nth step makes every rank's gaps repeat every N steps, and with little
// noise that period predicts them best. The step is the smallest divisor of P (a multiple of
// p) at which each run's widest gap recurs at one phase (widest_gap_recurs), else P.
std::size_t fundamental_step(const std::vector<int64_t>& gaps, std::size_t w, std::size_t p,
                             std::size_t period) {
  for (std::size_t d = p; d < period; d += p) {
    if (period % d == 0 && widest_gap_recurs(gaps, w, d)) return d;
  }
  return period;
}

// Fallback phase: the offset whose gaps are widest on average.
std::size_t widest_gap_phase(const std::vector<int64_t>& gaps, std::size_t w, std::size_t p) {
  std::size_t phase = 0;
  int64_t best_gap = std::numeric_limits<int64_t>::min();
  for (std::size_t o = 0; o < p; ++o) {
    int64_t sum = 0;
    int64_t count = 0;
    for (std::size_t i = w + o; i < gaps.size() && count < 64; i += p) {
      if (i == 0) continue;
      sum += gaps[i];
      ++count;
    }
    if (count && sum / count > best_gap) {
      best_gap = sum / count;
      phase = o;
    }
  }
  return phase;
}

bool is_traffic(const model::CallEvent& c) {
  return format::is_collective(c.func) || format::is_p2p(c.func);
}

void assign_calls(const model::RankTrace& rank, StepPlan& plan) {
  plan.step_of_call.assign(rank.calls.size(), -1);
  // Calls are sorted by entry and steps are disjoint and ordered: one merge pass.
  std::size_t s = 0;
  for (std::size_t i = 0; i < rank.calls.size(); ++i) {
    const int64_t t = rank.calls[i].enter_ns;
    if (i > 0 && t < rank.calls[i - 1].enter_ns) s = 0;  // unsorted input: restart the merge
    while (s < plan.steps.size() && plan.steps[s].end <= t) ++s;
    if (s < plan.steps.size() && plan.steps[s].begin <= t) {
      plan.step_of_call[i] = static_cast<int32_t>(s);
    }
  }
}

bool steps_from_ranges(const model::RankTrace& rank, StepPlan& plan) {
  std::map<std::string, std::vector<Interval>> families;
  std::map<std::string, std::string> example;
  for (const model::RangeEvent& r : rank.ranges) {
    const std::string& name = rank.name_of(r.name);
    if (r.end_ns <= r.start_ns || !StepDetector::looks_like_step(name)) continue;
    const std::string key = StepDetector::family_of(name);
    families[key].push_back({r.start_ns, r.end_ns});
    example.emplace(key, name);
  }
  const std::vector<Interval>* best = nullptr;
  std::string best_key;
  for (const auto& [key, spans] : families) {
    if (spans.size() >= 2 && (!best || spans.size() > best->size())) {
      best = &spans;
      best_key = key;
    }
  }
  if (!best) {
    // PyTorch's own step marker is a step even when the profiler recorded only one of them
    // (schedule active=1): one step, not "none found". Other names need two to be a loop.
    const auto profiler = families.find("profilerstep");
    if (profiler == families.end()) return false;
    best = &profiler->second;
    best_key = profiler->first;
  }
  std::vector<Interval> spans = *best;
  std::sort(spans.begin(), spans.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  // Keep disjoint ones (a range family nested in itself, e.g. recorded on two threads, would
  // otherwise count time twice). Back-to-back ranges may overlap by a rounding error (Kineto's
  // microsecond timestamps, two clocks read for one marker): an overlap under 1 % of the
  // previous range is the same loop's next step, not a nested copy (the windows are made
  // contiguous below anyway).
  for (const Interval& s : spans) {
    if (plan.steps.empty()) {
      plan.steps.push_back(s);
      continue;
    }
    const Interval& last = plan.steps.back();
    if (s.begin > last.begin && last.end - s.begin <= (last.end - last.begin) / 100) {
      plan.steps.push_back(s);
    }
  }
  // A step lasts until the next one starts: what happens between a range's end and the next
  // range's start (data loading before the "step" range is pushed, a host stall) belongs to the
  // loop's period, and leaving it out would hide exactly the idle time that explains a stall.
  // The last step has no next one: it is partial when the others typically gained a gap of
  // more than 2 % of their length that way.
  std::vector<int64_t> gaps, lengths;
  for (std::size_t i = 0; i + 1 < plan.steps.size(); ++i) {
    gaps.push_back(plan.steps[i + 1].begin - plan.steps[i].end);
    plan.steps[i].end = plan.steps[i + 1].begin;
    lengths.push_back(plan.steps[i].length());
  }
  plan.last_partial = !gaps.empty() && 50 * model::median(gaps) > model::median(lengths);
  plan.source = "ranges named like '" + example[best_key] + "'";
  return plan.steps.size() >= 2 || (plan.steps.size() == 1 && best_key == "profilerstep");
}

// A rank's traffic calls (collectives and point-to-point) as the period search sees them.
struct TrafficSequence {
  std::vector<std::size_t> idx;  // RankTrace::calls index of each, in call order
  std::vector<uint64_t> tokens;  // (comm, op, bytes) of each
  std::vector<int64_t> gaps;     // before each: its start minus the previous one's end
  std::size_t p = 0;             // the token period (0: none)
  std::size_t w = 0;             // warm-up calls before the first repeating one
};

TrafficSequence traffic_sequence(const model::RankTrace& rank) {
  TrafficSequence t;
  for (std::size_t i = 0; i < rank.calls.size(); ++i) {
    const model::CallEvent& c = rank.calls[i];
    if (!is_traffic(c)) continue;
    t.idx.push_back(i);
    uint64_t h = c.comm_id * 0x9E3779B97F4A7C15ull;
    h ^= (c.bytes() + 0x632BE59BD9B4E019ull) + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(c.func) * 0xBF58476D1CE4E5B9ull;
    t.tokens.push_back(h);
  }
  t.p = StepDetector::period_of(t.tokens);
  if (t.p == 0) return t;
  const std::size_t n = t.tokens.size();
  // Warm-up calls (DDP's initial parameter broadcast, ...) precede the first repeating one.
  while (t.w + t.p < n && t.tokens[t.w] != t.tokens[t.w + t.p]) ++t.w;
  t.gaps.assign(n, 0);
  for (std::size_t i = 1; i < n; ++i)
    t.gaps[i] = call_start(rank.calls[t.idx[i]]) - call_end(rank.calls[t.idx[i - 1]]);
  return t;
}

// The job's step from every rank's gaps at once: the gap before each call is the median of the
// ranks' gaps before that call (a synchronous job's ranks issue the same calls, and a busy
// machine delays each rank at different calls, so the median keeps what they share: the step),
// then the robust rules. Only when every rank has the same token period and warm-up.
bool pooled_step_period(const model::JobTrace& job, std::size_t& period) {
  std::vector<TrafficSequence> seqs;
  std::size_t n = std::numeric_limits<std::size_t>::max();
  for (const model::RankTrace& rank : job.ranks) {
    seqs.push_back(traffic_sequence(rank));
    const TrafficSequence& t = seqs.back();
    if (t.p == 0 || t.p != seqs.front().p || t.w != seqs.front().w) return false;
    n = std::min(n, t.gaps.size());
  }
  if (seqs.size() < 2) return false;
  std::vector<int64_t> pooled(n, 0), at;
  for (std::size_t i = 1; i < n; ++i) {
    at.clear();
    for (const TrafficSequence& t : seqs) at.push_back(t.gaps[i]);
    pooled[i] = model::median(at);
  }
  std::size_t phase = 0;
  return robust_step_period(pooled, seqs.front().w, seqs.front().p, period, phase);
}

bool steps_from_period(const model::RankTrace& rank, int64_t trace_begin, std::size_t wanted,
                       StepPlan& plan) {
  const TrafficSequence t = traffic_sequence(rank);
  const std::size_t p = t.p, w = t.w;
  if (p == 0) return false;
  const std::size_t n = t.tokens.size();
  const std::vector<std::size_t>& idx = t.idx;
  // Calls with the same (comm, op, bytes) can repeat within a step (equal-sized buckets), so
  // the token period p may be a fraction of the step. The step is the multiple of p
  // whose call gaps show one dominant gap per period (the forward pass, where no gradient is
  // ready) — boundaries then fall at the end of the previous step's last call.
  const std::vector<int64_t>& gaps = t.gaps;
  std::size_t period = p, phase = 0;
  bool from_gap_pattern = false;
  const bool imposed = wanted >= p && wanted % p == 0 && 2 * wanted <= n - w;
  if (imposed) {
    period = wanted;
    phase = widest_gap_phase(gaps, w, period);
  } else if (!robust_step_period(gaps, w, p, period, phase) &&
             !choose_step_period(gaps, w, p, period, phase)) {
    period = p;
    from_gap_pattern = step_period_from_gap_pattern(gaps, w, p, period);
    if (from_gap_pattern) period = fundamental_step(gaps, w, p, period);
    phase = widest_gap_phase(gaps, w, period);
  }
  const std::size_t k = w + phase;
  const std::size_t p_tokens = p;
  // Calls before the first full period (DDP's initial broadcast, a partial first step) belong to
  // the first step, which starts with the trace: step numbers then match the user's loop, and
  // that step is the one the warm-up rule leaves out.
  int64_t begin = trace_begin;
  for (std::size_t s = k; s + period <= n; s += period) {
    const int64_t end = call_end(rank.calls[idx[s + period - 1]]);
    if (end > begin) plan.steps.push_back({begin, end});
    begin = std::max(begin, end);
  }
  plan.source = "repeating collective sequence (" + std::to_string(period) + " calls per step" +
                (imposed              ? ", as on most ranks, split at the widest gap"
                 : from_gap_pattern   ? ", the period of its call gaps, split at the widest gap"
                 : period != p_tokens ? ", split at the widest gap"
                                      : "") +
                ")";
  plan.calls_per_step = period;
  plan.from_gap_pattern = from_gap_pattern;
  return plan.steps.size() >= 2;
}

}  // namespace

bool StepDetector::looks_like_step(const std::string& name) {
  return lower(name).find("step") != std::string::npos;
}

std::string StepDetector::family_of(const std::string& name) {
  std::string key;
  for (char c : lower(name)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '#') key.push_back(c);
  }
  while (!key.empty() && (key.back() == ' ' || key.back() == '_' || key.back() == '-')) {
    key.pop_back();
  }
  return key;
}

std::size_t StepDetector::period_of(const std::vector<uint64_t>& tokens) {
  const std::size_t n = std::min(tokens.size(), kPeriodWindow);
  for (std::size_t p = 1; 2 * p <= n; ++p) {
    std::size_t same = 0;
    for (std::size_t i = 0; i + p < n; ++i) same += tokens[i] == tokens[i + p];
    if (static_cast<double>(same) >= kPeriodAgreement * static_cast<double>(n - p)) return p;
  }
  return 0;
}

StepPlan StepDetector::detect(const model::RankTrace& rank, int64_t trace_begin, int64_t trace_end,
                              std::size_t calls_per_step) {
  StepPlan plan;
  if (!steps_from_ranges(rank, plan)) {
    plan.steps.clear();
    if (!steps_from_period(rank, trace_begin, calls_per_step, plan)) {
      plan = StepPlan{};
      plan.source = "none found (whole trace is one window)";
    }
  }
  plan.warmup = plan.steps.size() >= kMinStepsForWarmup ? 1 : 0;
  if (plan.steps.empty()) {
    plan.steady = {trace_begin, std::max(trace_begin, trace_end)};
  } else {
    plan.steady = {plan.steps[plan.warmup].begin, plan.steps.back().end};
  }
  assign_calls(rank, plan);
  return plan;
}

void StepDetector::agree(const model::JobTrace& job, const std::vector<Interval>& bounds,
                         std::vector<StepPlan>& plans) {
  auto impose = [&](std::size_t common, bool multiples_only) {
    for (std::size_t i = 0; i < plans.size() && i < job.ranks.size() && i < bounds.size(); ++i) {
      const StepPlan& p = plans[i];
      if (p.calls_per_step == 0 || p.calls_per_step == common) continue;
      if (multiples_only && p.calls_per_step % common != 0) continue;
      StepPlan again = detect(job.ranks[i], bounds[i].begin, bounds[i].end, common);
      if (again.calls_per_step == common) plans[i] = std::move(again);
    }
  };
  // Ranks that found different steps (a busy machine blurred each one's gaps differently: one
  // found a part of the step, another the step): the step of all their gaps together, when it
  // is clear, for every rank.
  std::size_t first = 0;
  bool differ = false;
  for (const StepPlan& p : plans) {
    if (p.calls_per_step == 0) continue;
    if (first != 0 && p.calls_per_step != first) differ = true;
    if (first == 0) first = p.calls_per_step;
  }
  std::size_t pooled = 0;
  if (differ && pooled_step_period(job, pooled)) {
    impose(pooled, false);
    return;
  }
  // The calls per step of a strict majority of the ranks with steps from their call sequence.
  std::map<std::size_t, std::size_t> votes;
  std::size_t voters = 0;
  for (const StepPlan& p : plans) {
    if (p.calls_per_step == 0) continue;
    ++votes[p.calls_per_step];
    ++voters;
  }
  std::size_t common = 0, most = 0;
  for (const auto& [calls, count] : votes) {
    if (count > most) {
      most = count;
      common = calls;
    }
  }
  if (2 * most <= voters) return;
  impose(common, true);
}

}  // namespace ncclwatch::analysis

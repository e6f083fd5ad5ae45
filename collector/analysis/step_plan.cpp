#include "analysis/step_plan.h"

#include <algorithm>
#include <cctype>
#include <map>

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

bool is_traffic(const model::CallEvent& c) {
  return format::is_collective(c.func) || format::is_p2p(c.func);
}

void assign_calls(const model::RankTrace& rank, StepPlan& plan) {
  plan.step_of_call.assign(rank.calls.size(), -1);
  for (std::size_t i = 0; i < rank.calls.size(); ++i) {
    const int64_t t = rank.calls[i].enter_ns;
    auto it = std::upper_bound(plan.steps.begin(), plan.steps.end(), t,
                               [](int64_t v, const Interval& s) { return v < s.begin; });
    if (it == plan.steps.begin()) continue;
    --it;
    if (t < it->end) plan.step_of_call[i] = static_cast<int32_t>(it - plan.steps.begin());
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
  if (!best) return false;
  std::vector<Interval> spans = *best;
  std::sort(spans.begin(), spans.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  // Keep disjoint ones (a range family nested in itself, e.g. recorded on two threads, would
  // otherwise count time twice).
  for (const Interval& s : spans) {
    if (plan.steps.empty() || s.begin >= plan.steps.back().end) plan.steps.push_back(s);
  }
  plan.source = "ranges named like '" + example[best_key] + "'";
  return plan.steps.size() >= 2;
}

bool steps_from_period(const model::RankTrace& rank, int64_t trace_begin, StepPlan& plan) {
  std::vector<std::size_t> idx;  // traffic calls, in call order
  std::vector<uint64_t> tokens;
  for (std::size_t i = 0; i < rank.calls.size(); ++i) {
    const model::CallEvent& c = rank.calls[i];
    if (!is_traffic(c)) continue;
    idx.push_back(i);
    uint64_t h = c.comm_id * 0x9E3779B97F4A7C15ull;
    h ^= (c.bytes + 0x632BE59BD9B4E019ull) + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(c.func) * 0xBF58476D1CE4E5B9ull;
    tokens.push_back(h);
  }
  const std::size_t p = StepDetector::period_of(tokens);
  if (p == 0) return false;
  const std::size_t n = tokens.size();
  // Warm-up calls (DDP's initial parameter broadcast, ...) precede the first repeating one.
  std::size_t w = 0;
  while (w + p < n && tokens[w] != tokens[w + p]) ++w;
  // Phase: a step starts after the largest typical gap between calls (the forward pass, where
  // no gradient is ready), so boundaries fall at the end of the previous step's last call.
  std::size_t phase = 0;
  int64_t best_gap = -1;
  for (std::size_t o = 0; o < p; ++o) {
    int64_t gap = 0;
    std::size_t count = 0;
    for (std::size_t i = w + o; i < n && count < 64; i += p, ++count) {
      if (i == 0) continue;
      gap += rank.calls[idx[i]].enter_ns - call_end(rank.calls[idx[i - 1]]);
    }
    if (count && gap / static_cast<int64_t>(count) > best_gap) {
      best_gap = gap / static_cast<int64_t>(count);
      phase = o;
    }
  }
  const std::size_t k = w + phase;
  int64_t begin = trace_begin;
  if (k > 0) {
    // Calls before the first full period form a step of their own (always warm-up).
    const int64_t end = call_end(rank.calls[idx[k - 1]]);
    if (end > begin) plan.steps.push_back({begin, end});
    begin = std::max(begin, end);
  }
  for (std::size_t s = k; s + p <= n; s += p) {
    const int64_t end = call_end(rank.calls[idx[s + p - 1]]);
    if (end > begin) plan.steps.push_back({begin, end});
    begin = std::max(begin, end);
  }
  plan.source = "repeating collective sequence (" + std::to_string(p) + " calls per step)";
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

StepPlan StepDetector::detect(const model::RankTrace& rank, int64_t trace_begin,
                              int64_t trace_end) {
  StepPlan plan;
  if (!steps_from_ranges(rank, plan)) {
    plan.steps.clear();
    if (!steps_from_period(rank, trace_begin, plan)) {
      plan.steps.clear();
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

}  // namespace ncclwatch::analysis

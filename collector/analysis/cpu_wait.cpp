#include "analysis/cpu_wait.h"

#include <algorithm>
#include <limits>

#include "analysis/interval_set.h"

namespace ncclwatch::analysis {

std::vector<double> cpu_wait_per_step(const model::RankTrace& rank, const StepPlan& plan) {
  const std::vector<Interval>& steps = plan.steps;
  const std::vector<model::SchedSample>& s = rank.sched;  // sorted by (tid, t_ns)
  if (s.empty() || steps.empty()) return {};
  std::vector<Interval> calls;
  calls.reserve(rank.calls.size());
  for (const model::CallEvent& c : rank.calls) calls.push_back({c.enter_ns, c.exit_ns});
  const IntervalSet in_calls = IntervalSet::from_unsorted(std::move(calls));
  // Time of [from, to) outside the rank's calls.
  auto outside = [&](int64_t from, int64_t to) {
    return to - from - in_calls.length_within(from, to);
  };
  std::vector<double> wait(steps.size(), 0.0);
  std::vector<bool> covered(steps.size(), false);
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    const model::SchedSample& a = s[i];
    const model::SchedSample& b = s[i + 1];
    // Another thread, no time between them, or a wait that went down: nothing known here.
    if (a.tid != b.tid || b.t_ns <= a.t_ns || b.wait_ns < a.wait_ns) continue;
    const int64_t out = outside(a.t_ns, b.t_ns);
    // Wait inside calls delays nobody: the thread is waiting for its peers (a spin or sleep
    // loop whose wake-ups queue for a CPU on a busy machine). Between two samples the wait
    // is spread over the time outside calls.
    const double rate =
        out > 0 ? static_cast<double>(b.wait_ns - a.wait_ns) / static_cast<double>(out) : 0.0;
    // Steps are in order and disjoint: the first one ending after a.t_ns, then on while they
    // start before b.t_ns.
    auto k = static_cast<std::size_t>(
        std::upper_bound(steps.begin(), steps.end(), a.t_ns,
                         [](int64_t t, const Interval& iv) { return t < iv.end; }) -
        steps.begin());
    for (; k < steps.size() && steps[k].begin < b.t_ns; ++k) {
      const int64_t from = std::max(a.t_ns, steps[k].begin), to = std::min(b.t_ns, steps[k].end);
      if (to <= from) continue;
      wait[k] += rate * static_cast<double>(outside(from, to));
      covered[k] = true;
    }
  }
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (!covered[k]) wait[k] = std::numeric_limits<double>::quiet_NaN();
  }
  return wait;
}

}  // namespace ncclwatch::analysis

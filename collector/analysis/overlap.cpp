#include "analysis/overlap.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ncclwatch::analysis {
namespace {

// The sets every window is measured on, built once per rank.
struct Sets {
  const IntervalSet* comm;
  const IntervalSet* compute;
  const IntervalSet* busy;
  IntervalSet overlapped;
  IntervalSet exposed;
  const IntervalSet* wait;
  // Start of each collective span preceded by idle GPU time, and that idle time.
  std::vector<std::pair<int64_t, int64_t>> idle_before;
};

// Cursor state for measuring increasing, disjoint windows in linear total time.
struct Cursor {
  std::size_t comm = 0, compute = 0, busy = 0, overlapped = 0, exposed = 0, wait = 0, idle = 0;
};

OverlapTotals measure(const Sets& s, Interval w, Cursor& c) {
  OverlapTotals t;
  t.window_ns = w.length();
  t.comm_ns = s.comm->length_within(w.begin, w.end, c.comm);
  t.compute_ns = s.compute->length_within(w.begin, w.end, c.compute);
  t.busy_ns = s.busy->length_within(w.begin, w.end, c.busy);
  t.overlapped_ns = s.overlapped.length_within(w.begin, w.end, c.overlapped);
  t.exposed_ns = s.exposed.length_within(w.begin, w.end, c.exposed);
  t.peer_wait_ns = s.wait->length_within(w.begin, w.end, c.wait);
  t.wait_ns = std::min(t.peer_wait_ns, t.exposed_ns);
  while (c.idle < s.idle_before.size() && s.idle_before[c.idle].first < w.begin) ++c.idle;
  for (std::size_t k = c.idle; k < s.idle_before.size() && s.idle_before[k].first < w.end; ++k) {
    t.idle_before_comm_ns += s.idle_before[k].second;
  }
  return t;
}

void add(OverlapTotals& t, const OverlapTotals& o) {
  t.window_ns += o.window_ns;
  t.comm_ns += o.comm_ns;
  t.overlapped_ns += o.overlapped_ns;
  t.exposed_ns += o.exposed_ns;
  t.peer_wait_ns += o.peer_wait_ns;
  t.wait_ns += o.wait_ns;
  t.compute_ns += o.compute_ns;
  t.busy_ns += o.busy_ns;
  t.idle_before_comm_ns += o.idle_before_comm_ns;
}

std::vector<std::pair<int64_t, int64_t>> idle_before_comm(const IntervalSet& comm,
                                                          const IntervalSet& busy) {
  // Busy includes comm, so every comm span lies inside one busy span; when that busy span
  // starts with the collective, the GPU sat idle from the previous busy span's end until it.
  std::vector<std::pair<int64_t, int64_t>> out;
  const auto& b = busy.spans();
  std::size_t j = 0;
  for (const Interval& c : comm.spans()) {
    while (j < b.size() && b[j].end < c.begin) ++j;
    if (j < b.size() && j > 0 && b[j].begin == c.begin) {
      out.emplace_back(c.begin, c.begin - b[j - 1].end);
    }
  }
  return out;
}

}  // namespace

double overlap_fraction(const model::RankTrace& rank, int64_t from_ns, int64_t to_ns) {
  const RankActivity a = RankActivity::of(rank);
  const int64_t comm = a.comm.length_within(from_ns, to_ns);
  if (comm <= 0) return std::numeric_limits<double>::quiet_NaN();
  const int64_t both = a.comm.intersect(a.compute).length_within(from_ns, to_ns);
  return static_cast<double>(both) / static_cast<double>(comm);
}

double overlap_fraction(const model::RankTrace& rank) {
  return overlap_fraction(rank, std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max());
}

RankOverlap OverlapAnalysis::of_rank(const model::RankTrace& rank, std::size_t rank_index,
                                     const RankActivity& activity, StepPlan plan,
                                     const IntervalSet& wait, const IntervalSet* compute_windows) {
  RankOverlap r;
  r.rank_index = rank_index;
  r.rank = rank.info.rank;
  r.host = rank.info.host;
  r.source = activity.source;
  r.measurable =
      (activity.source == CommSource::kNcclKernels || activity.source == CommSource::kCallEvents) &&
      activity.has_compute;

  Sets s{&activity.comm, &activity.compute, &activity.busy, {}, {}, {}, {}};
  s.overlapped = activity.comm.intersect(activity.compute);
  s.exposed = activity.comm.subtract(activity.compute);
  s.wait = &wait;
  s.idle_before = idle_before_comm(activity.comm, activity.busy);

  Cursor steps_cursor;
  r.steps.reserve(plan.steps.size());
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const Interval window = plan.steps[i];
    StepOverlap st;
    st.index = static_cast<uint32_t>(i);
    st.warmup = i < plan.warmup;
    st.totals = measure(s, window, steps_cursor);
    if (compute_windows)
      st.sampled = compute_windows->length_within(window.begin, window.end) == window.length();
    r.steps.push_back(st);
  }
  if (compute_windows) {
    // Compute is known only inside the windows: the steady state is the steady steps there.
    r.sampled = true;
    for (const StepOverlap& st : r.steps) {
      if (st.warmup || !st.sampled) continue;
      add(r.steady, st.totals);
      ++r.steady_steps;
    }
    r.measurable = r.measurable && r.steady_steps > 0;
  } else {
    Cursor steady_cursor;
    r.steady = measure(s, plan.steady, steady_cursor);
    r.steady_steps = plan.steady_steps();
    // Exposed waiting has one definition (docs/verdicts.md, "Figures"): per step, the peer
    // wait up to the step's exposed time, summed over the steps — as the step breakdown counts
    // it. min() over the whole window would let one step's hidden wait offset another's.
    if (r.steady_steps > 0) {
      r.steady.wait_ns = 0;
      for (const StepOverlap& st : r.steps)
        if (!st.warmup) r.steady.wait_ns += st.totals.wait_ns;
    }
  }
  r.plan = std::move(plan);
  return r;
}

}  // namespace ncclwatch::analysis

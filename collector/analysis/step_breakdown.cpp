#include "analysis/step_breakdown.h"

#include <algorithm>

namespace ncclwatch::analysis {
namespace {

struct Gaps {
  int64_t before_comm = 0;
  int64_t boundary = 0;
  int64_t other = 0;
};

// Splits the idle time of window w (w minus busy) into the three idle parts. `busy_hint` and
// `comm_hint` are cursors for windows measured in increasing order.
Gaps split_idle(const IntervalSet& busy, const IntervalSet& comm, Interval w,
                std::size_t& busy_hint, std::size_t& comm_hint) {
  const auto& b = busy.spans();
  const auto& c = comm.spans();
  while (busy_hint < b.size() && b[busy_hint].end <= w.begin) ++busy_hint;
  // A collective starts at t when a comm span begins there (comm ⊆ busy, and spans that touch
  // are merged, so a busy span that starts at t with comm running starts with that comm span).
  auto comm_starts_at = [&](int64_t t) {
    while (comm_hint < c.size() && c[comm_hint].end <= t) ++comm_hint;
    return comm_hint < c.size() && c[comm_hint].begin == t;
  };
  Gaps g;
  int64_t longest_inner = 0;  // longest interior gap not ending at a collective
  int64_t cursor = w.begin;
  for (std::size_t k = busy_hint; k <= b.size(); ++k) {
    const bool past = k == b.size() || b[k].begin >= w.end;
    const int64_t gap_end = past ? w.end : std::max(b[k].begin, w.begin);
    if (gap_end > cursor) {
      const int64_t len = gap_end - cursor;
      if (cursor == w.begin || past) {
        g.boundary += len;  // touches the step's start or end
      } else if (comm_starts_at(gap_end)) {
        g.before_comm += len;
      } else {
        g.other += len;
        longest_inner = std::max(longest_inner, len);
      }
    }
    if (past) break;
    cursor = std::max(cursor, std::min(b[k].end, w.end));
  }
  g.other -= longest_inner;
  g.boundary += longest_inner;
  return g;
}

}  // namespace

const char* to_string(BreakdownBasis basis) {
  return basis == BreakdownBasis::kGpu ? "gpu" : "host";
}

StepTimes& StepTimes::operator+=(const StepTimes& o) {
  step_ns += o.step_ns;
  compute_ns += o.compute_ns;
  comm_overlapped_ns += o.comm_overlapped_ns;
  exposed_wait_ns += o.exposed_wait_ns;
  exposed_transfer_ns += o.exposed_transfer_ns;
  memcpy_ns += o.memcpy_ns;
  idle_before_comm_ns += o.idle_before_comm_ns;
  idle_step_boundary_ns += o.idle_step_boundary_ns;
  idle_other_ns += o.idle_other_ns;
  kernels += o.kernels;
  host_in_nccl_ns += o.host_in_nccl_ns;
  host_between_ns += o.host_between_ns;
  return *this;
}

std::vector<Interval> StepBreakdownAnalysis::windows_of(const StepPlan& plan) {
  std::vector<Interval> windows;
  if (plan.steps.empty()) {
    if (plan.steady.length() > 0) windows.push_back(plan.steady);
    return windows;
  }
  windows.reserve(plan.steps.size());
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const int64_t begin = i == 0 ? plan.steps[0].begin : plan.steps[i - 1].end;
    windows.push_back({std::min(begin, plan.steps[i].begin), plan.steps[i].end});
  }
  return windows;
}

std::vector<int64_t> StepBreakdownAnalysis::compute_kernels_in(
    const model::RankTrace& rank, const std::vector<Interval>& windows) {
  std::vector<int64_t> out(windows.size(), 0);
  const auto& ks = rank.kernels;
  std::size_t cursor = 0;
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const Interval w = windows[i];
    while (cursor < ks.size() && ks[cursor].start_ns < w.begin) ++cursor;
    for (std::size_t k = cursor; k < ks.size() && ks[k].start_ns < w.end; ++k)
      out[i] += ks[k].kind == format::ActivityKind::kKernel && !ks[k].nccl;
  }
  return out;
}

RankBreakdown StepBreakdownAnalysis::of_rank(const model::RankTrace& rank, std::size_t rank_index,
                                             const RankActivity& activity, const StepPlan& plan,
                                             const IntervalSet& wait,
                                             const IntervalSet* compute_windows,
                                             const std::vector<int64_t>* compute_kernels) {
  RankBreakdown r;
  r.rank_index = rank_index;
  r.rank = rank.info.rank;
  r.host = rank.info.host;
  r.basis = activity.has_compute ? BreakdownBasis::kGpu : BreakdownBasis::kHost;
  r.steps_found = !plan.steps.empty();
  // Compute recorded only in windows: only whole steps inside them say what the GPU did.
  r.sampled = compute_windows != nullptr && r.basis == BreakdownBasis::kGpu;

  const std::vector<Interval> windows = windows_of(plan);
  std::vector<int64_t> counted;
  if (r.basis == BreakdownBasis::kGpu &&
      (compute_kernels == nullptr || compute_kernels->size() != windows.size())) {
    counted = compute_kernels_in(rank, windows);
    compute_kernels = &counted;
  }

  IntervalSet overlapped, exposed, in_nccl;
  if (r.basis == BreakdownBasis::kGpu) {
    overlapped = activity.comm.intersect(activity.compute);
    exposed = activity.comm.subtract(activity.compute);
  } else {
    std::vector<Interval> calls;
    calls.reserve(rank.calls.size());
    for (const model::CallEvent& c : rank.calls) calls.push_back({c.enter_ns, c.exit_ns});
    in_nccl = IntervalSet::from_unsorted(std::move(calls));
  }

  struct Cursor {
    std::size_t compute = 0, overlapped = 0, exposed = 0, wait = 0, busy = 0, busy_gaps = 0,
                comm_gaps = 0, nccl = 0;
  } cur;
  r.steps.reserve(windows.size());
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const Interval w = windows[i];
    StepBreakdown s;
    s.index = static_cast<uint32_t>(i);
    s.warmup = r.steps_found && i < plan.warmup;
    s.partial = r.steps_found && plan.last_partial && i + 1 == plan.steps.size();
    StepTimes& t = s.times;
    t.step_ns = w.length();
    if (r.basis == BreakdownBasis::kGpu) {
      t.compute_ns = activity.compute.length_within(w.begin, w.end, cur.compute);
      t.comm_overlapped_ns = overlapped.length_within(w.begin, w.end, cur.overlapped);
      const int64_t exp = exposed.length_within(w.begin, w.end, cur.exposed);
      t.exposed_wait_ns = std::min(exp, wait.length_within(w.begin, w.end, cur.wait));
      t.exposed_transfer_ns = exp - t.exposed_wait_ns;
      const int64_t busy = activity.busy.length_within(w.begin, w.end, cur.busy);
      t.memcpy_ns = std::max<int64_t>(0, busy - t.compute_ns - exp);
      const Gaps g = split_idle(activity.busy, activity.comm, w, cur.busy_gaps, cur.comm_gaps);
      t.idle_before_comm_ns = g.before_comm;
      t.idle_step_boundary_ns = g.boundary;
      t.idle_other_ns = g.other;
      t.kernels = (*compute_kernels)[i];
    } else {
      t.host_in_nccl_ns = in_nccl.length_within(w.begin, w.end, cur.nccl);
      t.host_between_ns = t.step_ns - t.host_in_nccl_ns;
    }
    if (r.sampled) s.sampled = compute_windows->length_within(w.begin, w.end) == w.length();
    if (!s.warmup && s.sampled) {
      r.steady += t;
      ++r.steady_steps;
    }
    r.steps.push_back(s);
  }
  return r;
}

}  // namespace ncclwatch::analysis

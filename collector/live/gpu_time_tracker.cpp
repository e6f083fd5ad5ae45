#include "live/gpu_time_tracker.h"

#include <algorithm>

namespace ncclwatch::live {

GpuTimeTracker::GpuTimeTracker(int64_t lag_ns, std::size_t max_pending)
    : lag_ns_(lag_ns), max_pending_(max_pending) {}

void GpuTimeTracker::add(int64_t start_ns, int64_t end_ns, Kind kind) {
  if (end_ns <= start_ns) return;
  if (swept_until_ != INT64_MIN && end_ns <= swept_until_) {
    ++late_;
    return;
  }
  if (swept_until_ != INT64_MIN && start_ns < swept_until_) {
    ++late_;
    start_ns = swept_until_;  // its earlier part was swept as idle or as other work already
  }
  pending_.push_back({start_ns, end_ns, kind});
  max_end_ = std::max(max_end_, end_ns);
  // A burst larger than the bound: sweep now, at the cost of counting later stragglers as late.
  if (pending_.size() > max_pending_) sweep(max_end_);
}

void GpuTimeTracker::advance() {
  if (max_end_ != INT64_MIN && max_end_ - lag_ns_ > swept_until_) sweep(max_end_ - lag_ns_);
}

void GpuTimeTracker::flush() {
  if (max_end_ != INT64_MIN) sweep(max_end_);
}

namespace {

// Total length of the union of the intervals (sorted by start) that `take` accepts.
template <typename Intervals, typename Take>
int64_t union_ns(const Intervals& sorted, Take take) {
  int64_t total = 0, cur_start = 0, cur_end = INT64_MIN;
  for (const auto& iv : sorted) {
    if (!take(iv)) continue;
    if (iv.start > cur_end) {
      if (cur_end != INT64_MIN) total += cur_end - cur_start;
      cur_start = iv.start;
      cur_end = iv.end;
    } else {
      cur_end = std::max(cur_end, iv.end);
    }
  }
  if (cur_end != INT64_MIN) total += cur_end - cur_start;
  return total;
}

}  // namespace

void GpuTimeTracker::sweep(int64_t horizon) {
  if (pending_.empty()) return;
  if (swept_until_ == INT64_MIN) {
    // The timeline starts at the first GPU work seen (GPU timing starts at the first collective).
    swept_until_ = std::min_element(pending_.begin(), pending_.end(), [](auto& a, auto& b) {
                     return a.start < b.start;
                   })->start;
  }
  if (horizon <= swept_until_) return;
  window_.clear();
  for (const auto& iv : pending_) {
    const int64_t s = std::max(iv.start, swept_until_), e = std::min(iv.end, horizon);
    if (s < e) window_.push_back({s, e, iv.kind});
  }
  std::sort(window_.begin(), window_.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  const int64_t busy = union_ns(window_, [](const Interval&) { return true; });
  const int64_t compute =
      union_ns(window_, [](const Interval& iv) { return iv.kind == Kind::kCompute; });
  const int64_t comm_or_compute =
      union_ns(window_, [](const Interval& iv) { return iv.kind != Kind::kOther; });
  busy_ns_ += busy;
  compute_ns_ += compute;
  exposed_comm_ns_ += comm_or_compute - compute;  // communication no compute kernel hid
  idle_ns_ += (horizon - swept_until_) - busy;
  swept_until_ = horizon;
  std::erase_if(pending_, [horizon](const Interval& iv) { return iv.end <= horizon; });
}

}  // namespace ncclwatch::live

#include "analysis/rank_activity.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace ncclwatch::analysis {
namespace {

IntervalSet build(std::vector<Interval>& spans) {
  const bool sorted =
      std::is_sorted(spans.begin(), spans.end(),
                     [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  return sorted ? IntervalSet::from_sorted(spans) : IntervalSet::from_unsorted(std::move(spans));
}

}  // namespace

const char* to_string(CommSource source) {
  switch (source) {
    case CommSource::kNcclKernels:
      return "NCCL kernels";  // (JSON value kept; other communication families count too)
    case CommSource::kNoCommKernels:
      return "none (no communication kernel among the GPU kernels)";
    case CommSource::kCallEvents:
      return "collective GPU intervals (CUDA events)";
    case CommSource::kNone:
      break;
  }
  return "none (host-only records)";
}

RankActivity RankActivity::clip(int64_t from, int64_t to) const {
  RankActivity out;  // not a copy of *this: the sets are the whole rank's
  out.source = source;
  out.has_compute = has_compute;
  out.first_ns = first_ns;
  out.last_ns = last_ns;
  out.comm = comm.clip(from, to);
  out.compute = compute.clip(from, to);
  out.busy = busy.clip(from, to);
  return out;
}

RankActivity RankActivity::of(const model::RankTrace& rank) {
  RankActivity a;
  std::vector<Interval> comm, compute, busy;
  comm.reserve(rank.kernels.size() / 4);
  compute.reserve(rank.kernels.size());
  busy.reserve(rank.kernels.size());
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const model::KernelEvent& k : rank.kernels) {
    if (k.end_ns < k.start_ns) continue;  // untrusted input: a reversed interval is no activity
    first = std::min(first, k.start_ns);
    last = std::max(last, k.end_ns);
    const Interval iv{k.start_ns, k.end_ns};
    busy.push_back(iv);
    if (k.kind != format::ActivityKind::kKernel) continue;
    (k.nccl ? comm : compute).push_back(iv);
  }
  a.has_compute = !compute.empty();
  if (!comm.empty()) {
    a.source = CommSource::kNcclKernels;
  } else {
    for (const model::CallEvent& c : rank.calls) {
      if (!c.has_gpu() || (!format::is_collective(c.func) && !format::is_p2p(c.func))) continue;
      comm.push_back({c.gpu_start_ns, c.gpu_end_ns});
      busy.push_back({c.gpu_start_ns, c.gpu_end_ns});
    }
    if (!comm.empty())
      a.source = CommSource::kCallEvents;
    else if (a.has_compute)
      a.source = CommSource::kNoCommKernels;
  }
  for (const model::CallEvent& c : rank.calls) {
    first = std::min(first, c.enter_ns);
    last = std::max(last, std::max(c.exit_ns, c.gpu_end_ns));
  }
  a.comm = build(comm);
  a.compute = build(compute);
  a.busy = build(busy);
  if (first <= last) {
    a.first_ns = first;
    a.last_ns = last;
  }
  return a;
}

}  // namespace ncclwatch::analysis

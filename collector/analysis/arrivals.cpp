#include "analysis/arrivals.h"

#include <algorithm>

#include "model/median.h"
#include "model/saturating.h"
#include "trace/parallel_for.h"

namespace ncclwatch::analysis {

using model::sat_add;
using model::sat_sub;

int64_t default_tie_ns(const model::ClockAlignment& clocks) {
  return std::max<int64_t>(2000, clocks.residual_ns);
}

Arrivals Arrivals::of(const model::JobTrace& job, const model::MatchResult& match,
                      const model::ClockAlignment& clocks, int64_t tie_ns, unsigned workers) {
  Arrivals a;
  a.tie_ns = tie_ns;
  a.member_ns.assign(match.members.size(), 0);
  a.by_arrival.assign(match.members.size(), 0);
  a.instances.resize(match.instances.size());
  // Instances are independent: chunks of them in parallel, counts summed in chunk order.
  const std::size_t ninst = match.instances.size();
  const std::size_t nchunks = std::min<std::size_t>(ninst, std::size_t{4} * workers);
  std::vector<std::pair<uint64_t, uint64_t>> counts(nchunks);  // (gpu, host) instances
  trace::parallel_for(nchunks, workers, [&](std::size_t c) {
    std::vector<std::pair<int64_t, uint32_t>> sorted;  // (arrival, offset in the instance)
    for (std::size_t i = c * ninst / nchunks; i < (c + 1) * ninst / nchunks; ++i) {
      if (a.measure(job, match, clocks, i, sorted))
        ++(a.instances[i].gpu ? counts[c].first : counts[c].second);
    }
  });
  for (const auto& [gpu, host] : counts) {
    a.gpu_instances += gpu;
    a.host_instances += host;
  }
  return a;
}

bool Arrivals::measure(const model::JobTrace& job, const model::MatchResult& match,
                       const model::ClockAlignment& clocks, std::size_t i,
                       std::vector<std::pair<int64_t, uint32_t>>& sorted) {
  const model::CollectiveInstance& inst = match.instances[i];
  InstanceArrival& out = instances[i];
  const std::size_t first = inst.first_member;
  const std::size_t end = first + inst.nmembers;
  if (!format::is_collective(inst.func) || inst.nmembers < 2 || end > match.members.size() ||
      end < first) {
    return false;
  }
  bool all_gpu = true;
  for (std::size_t m = first; m < end; ++m) {
    const model::InstanceMember& mem = match.members[m];
    if (mem.rank_index >= job.ranks.size() ||
        mem.call_index >= job.ranks[mem.rank_index].calls.size()) {
      return false;
    }
    all_gpu = all_gpu && job.ranks[mem.rank_index].calls[mem.call_index].has_gpu();
  }
  out.used = true;
  out.gpu = all_gpu;
  sorted.clear();
  int64_t best = 0;
  int32_t best_m = -1;
  for (std::size_t m = first; m < end; ++m) {
    const model::InstanceMember& mem = match.members[m];
    const model::CallEvent& c = job.ranks[mem.rank_index].calls[mem.call_index];
    const int64_t t = sat_add(all_gpu ? c.gpu_start_ns : c.enter_ns, clocks.at(mem.rank_index));
    member_ns[m] = t;
    sorted.emplace_back(t, static_cast<uint32_t>(m - first));
    if (best_m < 0 || t > best) {
      best = t;
      best_m = static_cast<int32_t>(m);
    }
  }
  // Small per-instance vectors (one entry per member): a full sort gives the arrival order,
  // the runner-up and the median.
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  out.last_ns = best;
  out.last_member = sat_sub(best, sorted[n - 2].first) > tie_ns ? best_m : -1;
  out.median_ns = model::middle_mean(sorted[(n - 1) / 2].first, sorted[n / 2].first);
  for (std::size_t k = 0; k < n; ++k) by_arrival[first + k] = sorted[k].second;
  return true;
}

}  // namespace ncclwatch::analysis

namespace ncclwatch::analysis {

std::vector<IntervalSet> peer_wait_sets(const model::JobTrace& job, const model::MatchResult& match,
                                        const model::ClockAlignment& clocks,
                                        const Arrivals& arrivals) {
  std::vector<std::vector<Interval>> spans(job.ranks.size());
  for (std::size_t i = 0; i < match.instances.size() && i < arrivals.instances.size(); ++i) {
    const InstanceArrival& ia = arrivals.instances[i];
    if (!ia.used || !ia.gpu) continue;
    const model::CollectiveInstance& inst = match.instances[i];
    for (std::size_t m = inst.first_member; m < inst.first_member + inst.nmembers; ++m) {
      const model::InstanceMember& mem = match.members[m];
      const model::CallEvent& c = job.ranks[mem.rank_index].calls[mem.call_index];
      const int64_t last_local = sat_sub(ia.last_ns, clocks.at(mem.rank_index));
      spans[mem.rank_index].push_back({c.gpu_start_ns, std::min(c.gpu_end_ns, last_local)});
    }
  }
  std::vector<IntervalSet> out;
  out.reserve(spans.size());
  for (auto& s : spans) out.push_back(IntervalSet::from_unsorted(std::move(s)));
  return out;
}

}  // namespace ncclwatch::analysis

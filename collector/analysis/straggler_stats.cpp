#include "analysis/straggler_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace ncclwatch::analysis {
namespace {

int64_t median_of(std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Robust spread (≈ σ for Gaussian jitter) that one persistent offset does not inflate.
int64_t robust_spread(std::vector<int64_t> v) {
  if (v.size() < 2) return 0;
  const int64_t med = median_of(v);
  for (int64_t& x : v) x = x > med ? x - med : med - x;
  return static_cast<int64_t>(1.4826 * static_cast<double>(median_of(v)));
}

}  // namespace

ArrivalStats ArrivalStats::of(const model::JobTrace& job, const model::MatchResult& match,
                              const Arrivals& arrivals, const std::vector<RankOverlap>& overlaps) {
  ArrivalStats out;
  const std::size_t nranks = job.ranks.size();
  out.ranks.resize(nranks);
  std::vector<uint32_t> host_of(nranks, 0);
  std::map<std::string, uint32_t> host_ids;
  for (std::size_t r = 0; r < nranks; ++r) {
    RankArrivalStats& s = out.ranks[r];
    s.rank_index = r;
    s.rank = job.ranks[r].info.rank;
    s.host = job.ranks[r].info.host;
    auto [it, inserted] = host_ids.emplace(s.host, static_cast<uint32_t>(out.hosts.size()));
    if (inserted) out.hosts.push_back({s.host, {}, 0, 0});
    host_of[r] = it->second;
    out.hosts[it->second].rank_indices.push_back(r);
    if (r < overlaps.size()) {
      s.step_lateness_ns.assign(overlaps[r].plan.steps.size(), std::numeric_limits<int64_t>::min());
    }
  }
  std::vector<std::vector<int64_t>> lateness(nranks);
  std::vector<double> fair_sum(nranks, 0.0);
  std::vector<uint32_t> hosts_present;
  std::vector<std::size_t> host_stamp(out.hosts.size(), std::numeric_limits<std::size_t>::max());
  for (std::size_t i = 0; i < match.instances.size(); ++i) {
    const InstanceArrival& ia = arrivals.instances[i];
    if (!ia.used) continue;
    const model::CollectiveInstance& inst = match.instances[i];
    const std::size_t first = inst.first_member, end = first + inst.nmembers;
    const double fair = 1.0 / static_cast<double>(inst.nmembers);
    int64_t latest_host_t = std::numeric_limits<int64_t>::min();
    uint32_t latest_host = 0;
    for (std::size_t m = first; m < end; ++m) {
      const model::InstanceMember& mem = match.members[m];
      RankArrivalStats& s = out.ranks[mem.rank_index];
      const int64_t t = arrivals.member_ns[m];
      const int64_t late = t - ia.median_ns;
      ++s.instances;
      ++s.func_counts[static_cast<int>(inst.func) % static_cast<int>(format::Func::kCount)];
      if (ia.last_member >= 0) {
        ++s.decided;
        fair_sum[mem.rank_index] += fair;
      }
      s.lateness_sum_ns += late;
      lateness[mem.rank_index].push_back(late);
      if (mem.rank_index < overlaps.size()) {
        const auto& soc = overlaps[mem.rank_index].plan.step_of_call;
        const int32_t step = mem.call_index < soc.size() ? soc[mem.call_index] : -1;
        if (step >= 0 && static_cast<std::size_t>(step) < s.step_lateness_ns.size()) {
          s.step_lateness_ns[step] = std::max(s.step_lateness_ns[step], late);
        }
      }
      if (t > latest_host_t) {
        latest_host_t = t;
        latest_host = host_of[mem.rank_index];
      }
    }
    if (ia.last_member >= 0) {
      const model::InstanceMember& lm = match.members[static_cast<std::size_t>(ia.last_member)];
      RankArrivalStats& s = out.ranks[lm.rank_index];
      ++s.last;
      s.lateness_when_last_sum_ns += ia.last_ns - ia.median_ns;
      for (std::size_t m = first; m < end; ++m)
        s.inflicted_wait_ns += ia.last_ns - arrivals.member_ns[m];
    }
    // Host roll-up: did the latest host beat all other hosts by more than the tie epsilon?
    int64_t other_latest = std::numeric_limits<int64_t>::min();
    bool multi_host = false;
    for (std::size_t m = first; m < end; ++m) {
      const std::size_t r = match.members[m].rank_index;
      if (host_of[r] != latest_host) {
        multi_host = true;
        other_latest = std::max(other_latest, arrivals.member_ns[m]);
      }
    }
    if (!multi_host) continue;
    // Every host present in the instance counts it once (stamped with the instance index).
    hosts_present.clear();
    for (std::size_t m = first; m < end; ++m) {
      const uint32_t h = host_of[match.members[m].rank_index];
      if (host_stamp[h] != i) {
        host_stamp[h] = i;
        hosts_present.push_back(h);
        ++out.hosts[h].instances;
      }
    }
    if (latest_host_t - other_latest > arrivals.tie_ns) {
      ++out.hosts[latest_host].last;
      for (uint32_t h : hosts_present) ++out.hosts[h].decided;
    }
  }
  std::vector<int64_t> spreads;
  for (std::size_t r = 0; r < nranks; ++r) {
    RankArrivalStats& s = out.ranks[r];
    if (s.instances) {
      s.fair_last_pct = s.decided ? 100.0 * fair_sum[r] / static_cast<double>(s.decided) : 0.0;
      s.lateness_spread_ns = robust_spread(std::move(lateness[r]));
      spreads.push_back(s.lateness_spread_ns);
    }
  }
  out.noise_ns = median_of(spreads);
  return out;
}

}  // namespace ncclwatch::analysis

#include "analysis/straggler_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "model/median.h"
#include "model/saturating.h"

namespace ncclwatch::analysis {

using model::sat_add;
using model::sat_sub;
namespace {

// Robust spread (≈ σ for Gaussian jitter) that one persistent offset does not inflate.
int64_t robust_spread(std::vector<int64_t> v) {
  if (v.size() < 2) return 0;
  const int64_t med = model::median_in_place(std::span<int64_t>(v));
  for (int64_t& x : v) x = x > med ? sat_sub(x, med) : sat_sub(med, x);
  return static_cast<int64_t>(1.4826 * static_cast<double>(model::median(std::move(v))));
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
      const std::size_t nsteps = overlaps[r].plan.steps.size();
      s.step_lateness_ns.assign(nsteps, std::numeric_limits<int64_t>::min());
      s.step_late_ordinal.assign(nsteps, 0);
      s.step_late_func.assign(nsteps, format::Func::kAllReduce);
      s.step_inflicted_ns.assign(nsteps, 0);
    }
  }
  // First call index of each step, per rank: a collective's position within its step.
  std::vector<std::vector<uint32_t>> step_first_call(nranks);
  for (std::size_t r = 0; r < nranks && r < overlaps.size(); ++r) {
    const auto& soc = overlaps[r].plan.step_of_call;
    step_first_call[r].assign(overlaps[r].plan.steps.size(), std::numeric_limits<uint32_t>::max());
    for (std::size_t c = 0; c < soc.size(); ++c) {
      if (soc[c] >= 0 && static_cast<std::size_t>(soc[c]) < step_first_call[r].size()) {
        auto& f = step_first_call[r][static_cast<std::size_t>(soc[c])];
        f = std::min<uint32_t>(f, static_cast<uint32_t>(c));
      }
    }
  }
  // Step of member m's call in its own rank's plan, -1 outside any step.
  auto step_of = [&](const model::InstanceMember& mem) -> int32_t {
    if (mem.rank_index >= overlaps.size()) return -1;
    const auto& soc = overlaps[mem.rank_index].plan.step_of_call;
    const int32_t step = mem.call_index < soc.size() ? soc[mem.call_index] : -1;
    return step >= 0 && static_cast<std::size_t>(step) <
                            out.ranks[mem.rank_index].step_lateness_ns.size()
               ? step
               : -1;
  };
  std::vector<std::vector<int64_t>> lateness(nranks);
  std::vector<double> fair_sum(nranks, 0.0);
  std::vector<uint32_t> hosts_present;
  std::vector<std::pair<int64_t, std::size_t>> order;
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
      const int64_t late = sat_sub(t, ia.median_ns);
      ++s.instances;
      ++s.func_counts[static_cast<int>(inst.func) % static_cast<int>(format::Func::kCount)];
      if (ia.last_member >= 0) {
        ++s.decided;
        fair_sum[mem.rank_index] += fair;
      }
      s.lateness_sum_ns = sat_add(s.lateness_sum_ns, late);
      lateness[mem.rank_index].push_back(late);
      const int32_t step = step_of(mem);
      if (step >= 0 && late > s.step_lateness_ns[static_cast<std::size_t>(step)]) {
        const auto k = static_cast<std::size_t>(step);
        s.step_lateness_ns[k] = late;
        const uint32_t first_call = step_first_call[mem.rank_index][k];
        s.step_late_ordinal[k] = static_cast<uint16_t>(
            std::min<uint32_t>(mem.call_index >= first_call ? mem.call_index - first_call + 1 : 1,
                               std::numeric_limits<uint16_t>::max()));
        s.step_late_func[k] = inst.func;
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
      s.lateness_when_last_sum_ns =
          sat_add(s.lateness_when_last_sum_ns, sat_sub(ia.last_ns, ia.median_ns));
    }
    // Who caused the waiting: between consecutive arrivals a(k) < a(k+1), the k+1 members already
    // there wait for the n-k-1 still missing, who share that interval's cost equally (the
    // Shapley split of the "wait for the last" game). One late rank gets all of it; two equally
    // late ranks half each; a rank that is last by a hair after a real straggler gets the hair.
    order.clear();
    for (std::size_t m = first; m < end; ++m) order.emplace_back(arrivals.member_ns[m], m);
    std::sort(order.begin(), order.end());
    double caused = 0;  // accumulated share of the member at position k
    for (std::size_t k = 1; k < order.size(); ++k) {
      const double gap = static_cast<double>(sat_sub(order[k].first, order[k - 1].first));
      caused += gap * static_cast<double>(k) / static_cast<double>(order.size() - k);
      if (caused <= 0) continue;
      const model::InstanceMember& cm = match.members[order[k].second];
      RankArrivalStats& s = out.ranks[cm.rank_index];
      const auto c = static_cast<int64_t>(std::min(caused, 9.2e18));
      s.inflicted_wait_ns = sat_add(s.inflicted_wait_ns, c);
      const int32_t step = step_of(cm);
      if (step >= 0) {
        auto& si = s.step_inflicted_ns[static_cast<std::size_t>(step)];
        si = sat_add(si, c);
      }
    }
    {
      const model::InstanceMember& fm = match.members[first];
      const int32_t step = step_of(fm);
      if (step >= 0 && static_cast<std::size_t>(step) >= overlaps[fm.rank_index].plan.warmup) {
        for (std::size_t m = first; m < end; ++m)
          out.steady_wait_ns =
              sat_add(out.steady_wait_ns, sat_sub(ia.last_ns, arrivals.member_ns[m]));
      }
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
    if (sat_sub(latest_host_t, other_latest) > arrivals.tie_ns) {
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
  out.noise_ns = model::median(std::move(spreads));
  return out;
}

}  // namespace ncclwatch::analysis

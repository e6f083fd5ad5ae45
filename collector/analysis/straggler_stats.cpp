#include "analysis/straggler_stats.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>

#include "model/median.h"
#include "model/robust_spread.h"
#include "model/saturating.h"
#include "trace/parallel_for.h"

namespace ncclwatch::analysis {

using model::sat_add;
using model::sat_sub;
namespace {

// Per rank and step, the share of its waiting for peers that compute did not hide: the exposed
// wait (OverlapTotals::wait_ns) over the peer wait. A hidden wait costs the rank no time, so
// a straggler's cost counts only the exposed part. Ranks without a compute timeline
// (host-only, lite mode) cannot tell: all of their waiting counts.
class Exposure {
 public:
  explicit Exposure(const std::vector<RankOverlap>& overlaps) {
    steps_.resize(overlaps.size());
    rank_.assign(overlaps.size(), 1.0);
    for (std::size_t r = 0; r < overlaps.size(); ++r) {
      const RankOverlap& o = overlaps[r];
      if (!o.measurable) continue;
      rank_[r] = share(o.steady);
      steps_[r].reserve(o.steps.size());
      for (const StepOverlap& st : o.steps) steps_[r].push_back(share(st.totals));
    }
  }
  // `step` -1 (outside any step): the rank's steady-state share.
  double of(std::size_t rank, int32_t step) const {
    if (rank >= rank_.size()) return 1.0;
    const std::vector<double>& s = steps_[rank];
    return step >= 0 && static_cast<std::size_t>(step) < s.size()
               ? s[static_cast<std::size_t>(step)]
               : rank_[rank];
  }

 private:
  static double share(const OverlapTotals& t) {
    return t.peer_wait_ns > 0 ? static_cast<double>(t.wait_ns) / static_cast<double>(t.peer_wait_ns)
                              : 1.0;
  }
  std::vector<std::vector<double>> steps_;
  std::vector<double> rank_;
};

// Adds `ns` > 0 to a sum that other chunks of pass 1 add to at the same time. Saturating sums of
// positive terms are min(sum, INT64_MAX) in any order, so the result does not depend on theirs.
void add_shared(int64_t& sum, int64_t ns) {
  std::atomic_ref<int64_t> shared(sum);
  int64_t seen = shared.load(std::memory_order_relaxed);
  while (!shared.compare_exchange_weak(seen, sat_add(seen, ns), std::memory_order_relaxed)) {
  }
}

// Pass 1 over one instance: who caused how much of the waiting (Shapley split), added straight
// to the ranks' sums (not kept per member: that was 24 bytes per call of every rank, at the
// analyses' peak), the steady waiting, and the host roll-up counts, into `hosts` (this chunk's
// own counters); and each member's instance.
struct InstancePass {
  const model::MatchResult& match;
  const Arrivals& arrivals;
  const std::vector<RankOverlap>& overlaps;
  const std::vector<uint32_t>& host_of;
  const std::vector<std::size_t>& nsteps;  // per rank: its plan's step count
  const Exposure& exposure;
  std::vector<RankArrivalStats>& ranks;  // inflicted_wait_ns, exposed_inflicted_ns (and per step)
  std::vector<uint32_t>& instance_of;    // per member index

  // Step of member m's call in its own rank's plan, -1 outside any step.
  int32_t step_of(const model::InstanceMember& mem) const {
    if (mem.rank_index >= overlaps.size()) return -1;
    const auto& soc = overlaps[mem.rank_index].plan.step_of_call;
    const int32_t step = mem.call_index < soc.size() ? soc[mem.call_index] : -1;
    return step >= 0 && static_cast<std::size_t>(step) < nsteps[mem.rank_index] ? step : -1;
  }

  // Share of member m's waiting that compute did not hide on its rank (in its step).
  double exposure_of(const model::InstanceMember& mem) const {
    return exposure.of(mem.rank_index, step_of(mem));
  }

  // What member m caused in its instance: `caused_ns` of the waiting, `exposed_ns` of it exposed.
  void add_caused(std::size_t m, int64_t caused_ns, int64_t exposed_ns) const {
    const model::InstanceMember& mem = match.members[m];
    RankArrivalStats& s = ranks[mem.rank_index];
    if (caused_ns > 0) add_shared(s.inflicted_wait_ns, caused_ns);
    if (exposed_ns > 0) {
      add_shared(s.exposed_inflicted_ns, exposed_ns);
      const int32_t step = step_of(mem);
      if (step >= 0)
        add_shared(s.step_exposed_inflicted_ns[static_cast<std::size_t>(step)], exposed_ns);
    }
  }

  void run(std::size_t i, int64_t& steady_wait, std::vector<HostArrivalStats>& hosts,
           std::vector<std::size_t>& host_stamp, std::vector<uint32_t>& hosts_present) const {
    const InstanceArrival& ia = arrivals.instances[i];
    const model::CollectiveInstance& inst = match.instances[i];
    const std::size_t first = inst.first_member, n = inst.nmembers, end = first + n;
    for (std::size_t m = first; m < end; ++m) instance_of[m] = static_cast<uint32_t>(i);
    // Who caused the waiting: between consecutive arrivals a(k) < a(k+1), the k+1 members
    // already there wait for the n-k-1 still missing, who share that interval's cost equally
    // (the Shapley split of the "wait for the last" game). One late rank gets all of it; two
    // equally late ranks half each; a rank that is last by a hair after a real straggler gets
    // the hair.
    // The exposed share splits the same way, each waiting member counting with the share of
    // its waiting that compute did not hide (Exposure).
    const uint32_t* order = arrivals.by_arrival.data() + first;
    double caused = 0, exposed = 0;  // accumulated shares of the member at position k
    double waiting_exposure = 0;     // sum of the exposure of the members at positions < k
    for (std::size_t k = 1; k < n; ++k) {
      const double gap = static_cast<double>(
          sat_sub(arrivals.member_ns[first + order[k]], arrivals.member_ns[first + order[k - 1]]));
      waiting_exposure += exposure_of(match.members[first + order[k - 1]]);
      caused += gap * static_cast<double>(k) / static_cast<double>(n - k);
      exposed += gap * waiting_exposure / static_cast<double>(n - k);
      add_caused(first + order[k], caused > 0 ? static_cast<int64_t>(std::min(caused, 9.2e18)) : 0,
                 exposed > 0 ? static_cast<int64_t>(std::min(exposed, 9.2e18)) : 0);
    }
    const int32_t step = step_of(match.members[first]);
    if (step >= 0 &&
        static_cast<std::size_t>(step) >= overlaps[match.members[first].rank_index].plan.warmup) {
      for (std::size_t m = first; m < end; ++m) {
        const double wait = static_cast<double>(sat_sub(ia.last_ns, arrivals.member_ns[m]));
        steady_wait =
            sat_add(steady_wait,
                    static_cast<int64_t>(std::min(wait * exposure_of(match.members[m]), 9.2e18)));
      }
    }
    // Host roll-up: did the latest host beat all other hosts by more than the tie epsilon?
    int64_t latest_host_t = std::numeric_limits<int64_t>::min();
    uint32_t latest_host = 0;
    for (std::size_t m = first; m < end; ++m) {
      if (arrivals.member_ns[m] > latest_host_t) {
        latest_host_t = arrivals.member_ns[m];
        latest_host = host_of[match.members[m].rank_index];
      }
    }
    int64_t other_latest = std::numeric_limits<int64_t>::min();
    bool multi_host = false;
    for (std::size_t m = first; m < end; ++m) {
      if (host_of[match.members[m].rank_index] != latest_host) {
        multi_host = true;
        other_latest = std::max(other_latest, arrivals.member_ns[m]);
      }
    }
    if (!multi_host) return;
    // Every host present in the instance counts it once (stamped with the instance index).
    hosts_present.clear();
    for (std::size_t m = first; m < end; ++m) {
      const uint32_t h = host_of[match.members[m].rank_index];
      if (host_stamp[h] != i) {
        host_stamp[h] = i;
        hosts_present.push_back(h);
        ++hosts[h].instances;
      }
    }
    if (sat_sub(latest_host_t, other_latest) > arrivals.tie_ns) {
      ++hosts[latest_host].last;
      for (uint32_t h : hosts_present) ++hosts[h].decided;
    }
  }
};

// The setup both passes share: per rank its index, host id and step count; the used
// instances' members grouped by rank in instance order.
struct RankLayout {
  std::vector<uint32_t> host_of;        // per rank: index into ArrivalStats::hosts
  std::vector<std::size_t> nsteps;      // per rank: its plan's step count
  std::vector<std::size_t> rank_begin;  // by_rank[rank_begin[r] .. rank_begin[r + 1]): rank r
  // Member indices (32 bits, as CollectiveInstance::first_member): one per call of every rank.
  std::vector<uint32_t> by_rank;
};

// Fills out.ranks' identity and out.hosts; returns each rank's host id and step count.
void identify_ranks(const model::JobTrace& job, const std::vector<RankOverlap>& overlaps,
                    ArrivalStats& out, RankLayout& layout) {
  const std::size_t nranks = job.ranks.size();
  out.ranks.resize(nranks);
  layout.host_of.assign(nranks, 0);
  layout.nsteps.assign(nranks, 0);
  std::map<std::string, uint32_t> host_ids;
  for (std::size_t r = 0; r < nranks; ++r) {
    RankArrivalStats& s = out.ranks[r];
    s.rank_index = r;
    s.rank = job.ranks[r].info.rank;
    s.host = job.ranks[r].info.host;
    auto [it, inserted] = host_ids.emplace(s.host, static_cast<uint32_t>(out.hosts.size()));
    if (inserted) out.hosts.push_back({s.host, {}, 0, 0});
    layout.host_of[r] = it->second;
    out.hosts[it->second].rank_indices.push_back(r);
    if (r < overlaps.size()) layout.nsteps[r] = overlaps[r].plan.steps.size();
    s.step_exposed_inflicted_ns.assign(layout.nsteps[r], 0);  // pass 1 adds to it
  }
}

// The used instances' members, grouped by rank in instance order (a counting sort).
void group_members_by_rank(const model::MatchResult& match, const Arrivals& arrivals,
                           std::size_t nranks, RankLayout& layout) {
  std::vector<std::size_t>& rank_begin = layout.rank_begin;
  rank_begin.assign(nranks + 1, 0);
  for (std::size_t i = 0; i < match.instances.size(); ++i) {
    if (!arrivals.instances[i].used) continue;
    const model::CollectiveInstance& inst = match.instances[i];
    for (std::size_t m = inst.first_member; m < inst.first_member + inst.nmembers; ++m)
      ++rank_begin[match.members[m].rank_index + 1];
  }
  for (std::size_t r = 0; r < nranks; ++r) rank_begin[r + 1] += rank_begin[r];
  layout.by_rank.assign(rank_begin[nranks], 0);
  std::vector<std::size_t> fill(rank_begin.begin(), rank_begin.end() - 1);
  for (std::size_t i = 0; i < match.instances.size(); ++i) {
    if (!arrivals.instances[i].used) continue;
    const model::CollectiveInstance& inst = match.instances[i];
    for (std::size_t m = inst.first_member; m < inst.first_member + inst.nmembers; ++m)
      layout.by_rank[fill[match.members[m].rank_index]++] = static_cast<uint32_t>(m);
  }
}

// Pass 1: chunks of instances, each with its own host counters and steady-wait sum, combined in
// chunk order.
void run_instance_pass(const InstancePass& pass, unsigned workers, ArrivalStats& out) {
  const std::size_t ninst = pass.match.instances.size();
  const std::size_t nchunks = std::min<std::size_t>(ninst, std::size_t{4} * workers);
  struct Chunk {
    int64_t steady_wait = 0;
    std::vector<HostArrivalStats> hosts;
  };
  std::vector<Chunk> chunks(nchunks);
  trace::parallel_for(nchunks, workers, [&](std::size_t c) {
    Chunk& ch = chunks[c];
    ch.hosts.assign(out.hosts.size(), {});
    std::vector<std::size_t> host_stamp(out.hosts.size(), std::numeric_limits<std::size_t>::max());
    std::vector<uint32_t> hosts_present;
    for (std::size_t i = c * ninst / nchunks; i < (c + 1) * ninst / nchunks; ++i) {
      if (pass.arrivals.instances[i].used)
        pass.run(i, ch.steady_wait, ch.hosts, host_stamp, hosts_present);
    }
  });
  for (const Chunk& ch : chunks) {
    out.steady_exposed_wait_ns = sat_add(out.steady_exposed_wait_ns, ch.steady_wait);
    for (std::size_t h = 0; h < out.hosts.size(); ++h) {
      out.hosts[h].instances += ch.hosts[h].instances;
      out.hosts[h].decided += ch.hosts[h].decided;
      out.hosts[h].last += ch.hosts[h].last;
    }
  }
}

// First call index of each of a rank's steps: a collective's position within its step.
std::vector<uint32_t> step_first_calls(const RankOverlap* overlap, std::size_t k_steps) {
  std::vector<uint32_t> first(k_steps, std::numeric_limits<uint32_t>::max());
  if (!k_steps) return first;
  const auto& soc = overlap->plan.step_of_call;
  for (std::size_t c = 0; c < soc.size(); ++c) {
    if (soc[c] >= 0 && static_cast<std::size_t>(soc[c]) < k_steps) {
      auto& f = first[static_cast<std::size_t>(soc[c])];
      f = std::min<uint32_t>(f, static_cast<uint32_t>(c));
    }
  }
  return first;
}

// Pass 2 for one rank, over its own members in instance order: its other sums, its lateness
// samples, its worst lateness per step (the first of equal ones).
struct RankPass {
  const InstancePass& pass;
  const RankLayout& layout;

  void run(std::size_t r, RankArrivalStats& s) const {
    const std::size_t k_steps = layout.nsteps[r];
    s.step_lateness_ns.assign(k_steps, std::numeric_limits<int64_t>::min());
    s.step_late_ordinal.assign(k_steps, 0);
    s.step_late_func.assign(k_steps, format::Func::kAllReduce);
    const std::vector<uint32_t> step_first_call =
        step_first_calls(k_steps ? &pass.overlaps[r] : nullptr, k_steps);
    std::vector<int64_t> lateness;
    lateness.reserve(layout.rank_begin[r + 1] - layout.rank_begin[r]);
    double fair_sum = 0;
    for (std::size_t j = layout.rank_begin[r]; j < layout.rank_begin[r + 1]; ++j)
      add_member(layout.by_rank[j], step_first_call, s, lateness, fair_sum);
    if (s.instances) {
      s.fair_last_pct = s.decided ? 100.0 * fair_sum / static_cast<double>(s.decided) : 0.0;
      s.lateness_spread_ns = model::robust_spread(std::move(lateness));
    }
  }

  void add_member(std::size_t m, const std::vector<uint32_t>& step_first_call, RankArrivalStats& s,
                  std::vector<int64_t>& lateness, double& fair_sum) const {
    const model::MatchResult& match = pass.match;
    const Arrivals& arrivals = pass.arrivals;
    const model::InstanceMember& mem = match.members[m];
    const uint32_t i = pass.instance_of[m];
    const model::CollectiveInstance& inst = match.instances[i];
    const InstanceArrival& ia = arrivals.instances[i];
    const int64_t late = sat_sub(arrivals.member_ns[m], ia.median_ns);
    ++s.instances;
    const auto func = static_cast<std::size_t>(inst.func);
    if (func < std::size(s.func_counts)) ++s.func_counts[func];
    if (ia.last_member >= 0) {
      ++s.decided;
      fair_sum += 1.0 / static_cast<double>(inst.nmembers);
      if (static_cast<std::size_t>(ia.last_member) == m) {
        ++s.last;
        s.lateness_when_last_sum_ns =
            sat_add(s.lateness_when_last_sum_ns, sat_sub(ia.last_ns, ia.median_ns));
      }
    }
    s.lateness_sum_ns = sat_add(s.lateness_sum_ns, late);
    lateness.push_back(late);
    const int32_t step = pass.step_of(mem);
    if (step >= 0 && late > s.step_lateness_ns[static_cast<std::size_t>(step)]) {
      const auto k = static_cast<std::size_t>(step);
      s.step_lateness_ns[k] = late;
      const uint32_t first_call = step_first_call[k];
      s.step_late_ordinal[k] = static_cast<uint16_t>(
          std::min<uint32_t>(mem.call_index >= first_call ? mem.call_index - first_call + 1 : 1,
                             std::numeric_limits<uint16_t>::max()));
      s.step_late_func[k] = inst.func;
    }
  }
};

}  // namespace

// Two passes, each parallel, so that the result does not depend on the worker count: pass 1 per
// chunk of instances (what each instance says about its members, in sums whose order does not
// matter, and its hosts, combined in chunk order), pass 2 per rank over that rank's own members
// in instance order.
ArrivalStats ArrivalStats::of(const model::JobTrace& job, const model::MatchResult& match,
                              const Arrivals& arrivals, const std::vector<RankOverlap>& overlaps,
                              unsigned workers) {
  ArrivalStats out;
  const std::size_t nranks = job.ranks.size();
  RankLayout layout;
  identify_ranks(job, overlaps, out, layout);
  group_members_by_rank(match, arrivals, nranks, layout);
  const Exposure exposure(overlaps);
  std::vector<uint32_t> instance_of(match.members.size());
  const InstancePass pass{match,         arrivals, overlaps,  layout.host_of,
                          layout.nsteps, exposure, out.ranks, instance_of};
  run_instance_pass(pass, workers, out);
  const RankPass rank_pass{pass, layout};
  trace::parallel_for(nranks, workers, [&](std::size_t r) { rank_pass.run(r, out.ranks[r]); });
  std::vector<int64_t> spreads;
  for (const RankArrivalStats& s : out.ranks) {
    if (s.instances) spreads.push_back(s.lateness_spread_ns);
  }
  out.noise_ns = model::median(std::move(spreads));
  return out;
}

}  // namespace ncclwatch::analysis

#include "clock/clock_aligner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "clock/host_groups.h"
#include "clock/robust_estimate.h"
#include "model/median.h"
#include "model/saturating.h"

namespace ncclwatch::clock {

using model::sat_add;
using model::sat_neg;
using model::sat_sub;

namespace {

// Samples between two hosts: t(anchor) - t(other), both on their base (wall) offsets.
struct PairSamples {
  std::vector<int64_t> gpu;
  std::vector<int64_t> host;
};

struct Edge {
  uint32_t a = 0, b = 0;
  RobustEstimate est;  // C_b - C_a
  const char* method = "";
};

struct HostTime {
  uint32_t host;
  int64_t t;
};

// Per instance: each host's end time (median over its members), then one sample per host
// against the lowest host present.
void sample_instance(const model::JobTrace& job, const model::MatchResult& match,
                     const model::CollectiveInstance& inst, const HostGroups& hosts,
                     const std::vector<int64_t>& base, std::vector<HostTime>& scratch,
                     std::map<std::pair<uint32_t, uint32_t>, PairSamples>& pairs) {
  bool all_gpu = true;
  for (uint32_t k = 0; k < inst.nmembers; ++k) {
    const auto& m = match.members[inst.first_member + k];
    if (!job.ranks[m.rank_index].calls[m.call_index].has_gpu()) {
      all_gpu = false;
      break;
    }
  }
  scratch.clear();
  for (uint32_t k = 0; k < inst.nmembers; ++k) {
    const auto& m = match.members[inst.first_member + k];
    const model::CallEvent& c = job.ranks[m.rank_index].calls[m.call_index];
    int64_t t = all_gpu ? c.gpu_end_ns : c.exit_ns;
    if (t <= 0 || (!all_gpu && c.exit_ns < c.enter_ns)) continue;  // never returned
    uint32_t h = hosts.host_of_rank[m.rank_index];
    scratch.push_back(HostTime{h, sat_add(t, base[h])});
  }
  std::sort(scratch.begin(), scratch.end(), [](const HostTime& x, const HostTime& y) {
    return x.host != y.host ? x.host < y.host : x.t < y.t;
  });
  if (scratch.empty() || scratch.front().host == scratch.back().host) return;
  int64_t anchor_t = 0;
  uint32_t anchor = scratch.front().host;
  for (std::size_t i = 0; i < scratch.size();) {
    std::size_t j = i;
    while (j < scratch.size() && scratch[j].host == scratch[i].host) ++j;
    // Median member of this host (sorted by time within the host).
    int64_t t = model::middle_mean(scratch[i + (j - i - 1) / 2].t, scratch[i + (j - i) / 2].t);
    if (i == 0) {
      anchor_t = t;
    } else {
      auto& ps = pairs[{anchor, scratch[i].host}];
      (all_gpu ? ps.gpu : ps.host).push_back(sat_sub(anchor_t, t));
    }
    i = j;
  }
}

}  // namespace

model::ClockAlignment align_clocks(const model::JobTrace& job, const model::MatchResult& match,
                                   const ClockOptions& options) {
  model::ClockAlignment out;
  HostGroups hosts = group_hosts(job);
  const std::size_t nh = hosts.names.size();
  if (nh == 0) return out;
  // Base: wall clock relative to the reference host; a host without anchors starts at 0.
  std::vector<int64_t> base(nh, 0);
  for (std::size_t h = 0; h < nh; ++h) {
    if (hosts.wall_known[h] && hosts.wall_known[0])
      base[h] = sat_sub(hosts.wall_offset[h], hosts.wall_offset[0]);
  }

  std::map<std::pair<uint32_t, uint32_t>, PairSamples> pairs;
  if (nh > 1) {
    uint64_t colls = 0;
    for (const auto& inst : match.instances)
      colls += format::is_collective(inst.func) && inst.nmembers > 1;
    uint64_t stride = std::max<uint64_t>(1, colls / std::max<uint64_t>(1, options.max_instances));
    uint64_t n = 0;
    std::vector<HostTime> scratch;
    for (const auto& inst : match.instances) {
      if (!format::is_collective(inst.func) || inst.nmembers < 2) continue;
      if (n++ % stride != 0) continue;
      sample_instance(job, match, inst, hosts, base, scratch, pairs);
    }
  }

  std::vector<Edge> edges;
  for (auto& [key, ps] : pairs) {
    Edge e{key.first, key.second, {}, ""};
    if (ps.gpu.size() >= options.min_samples) {
      e.est = robust_estimate(ps.gpu);
      e.method = "gpu-kernel-end";
    } else if (ps.host.size() >= options.min_samples) {
      e.est = robust_estimate(ps.host);
      e.method = "host-exit";
    }
    if (e.est.kept >= options.min_samples) edges.push_back(e);
  }

  // Grow a tree from the reference host, always through the best-supported edge (Prim).
  std::vector<bool> placed(nh, false);
  std::vector<int64_t> correction(nh, 0);
  out.hosts.resize(nh);
  placed[0] = true;
  out.hosts[0].method = "reference";
  for (;;) {
    const Edge* best = nullptr;
    for (const Edge& e : edges) {
      if (placed[e.a] == placed[e.b]) continue;
      if (best == nullptr || e.est.kept > best->est.kept) best = &e;
    }
    if (best == nullptr) break;
    bool forward = placed[best->a];
    uint32_t from = forward ? best->a : best->b, to = forward ? best->b : best->a;
    // A shift smaller than twice the standard error of the median (1.2533 spread / sqrt(n)) is
    // not told apart from none: the host keeps its wall-clock relation to `from`.
    const double se = 1.2533 * static_cast<double>(best->est.spread) /
                      std::sqrt(static_cast<double>(best->est.kept));
    const bool significant = std::fabs(static_cast<double>(best->est.median)) >= 2.0 * se;
    const int64_t step = significant ? (forward ? best->est.median : sat_neg(best->est.median)) : 0;
    correction[to] = sat_add(correction[from], step);
    placed[to] = true;
    model::HostOffset& ho = out.hosts[to];
    ho.residual_ns = sat_add(out.hosts[from].residual_ns, best->est.spread);
    ho.samples = best->est.kept;
    ho.significant = significant;
    ho.method =
        std::string(best->method) + (significant ? "" : " (not significant: wall clock kept)");
  }
  for (std::size_t h = 0; h < nh; ++h) {
    model::HostOffset& ho = out.hosts[h];
    ho.host = hosts.names[h];
    ho.offset_ns = sat_add(base[h], correction[h]);
    if (!placed[h])
      ho.method = hosts.wall_known[h] && hosts.wall_known[0] ? "wall-clock (no support)"
                                                             : "none (no support)";
    if (ho.significant) out.residual_ns = std::max(out.residual_ns, ho.residual_ns);
  }
  out.rank_offset_ns.resize(job.ranks.size());
  for (std::size_t r = 0; r < job.ranks.size(); ++r)
    out.rank_offset_ns[r] = out.hosts[hosts.host_of_rank[r]].offset_ns;
  return out;
}

}  // namespace ncclwatch::clock

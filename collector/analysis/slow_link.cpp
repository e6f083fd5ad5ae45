#include "analysis/slow_link.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "analysis/robust_stats.h"

namespace ncclwatch::analysis {
namespace {

struct CommTransfers {
  uint64_t id = 0;
  std::vector<uint32_t> hosts;  // sorted host ids of its members
  std::vector<double> per_byte;
  std::vector<double> ns;
  double median_per_byte = 0;
};

bool contains(const std::vector<uint32_t>& sorted, uint32_t h) {
  return std::binary_search(sorted.begin(), sorted.end(), h);
}

// Transfers of the GPU-timed, bandwidth-bound instances of cross-node communicators.
std::vector<CommTransfers> transfers_by_comm(const model::JobTrace& job,
                                             const model::MatchResult& match,
                                             const model::ClockAlignment& clocks,
                                             const Arrivals& arrivals,
                                             const std::vector<uint32_t>& host_of) {
  std::vector<CommTransfers> comms;
  std::unordered_map<uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < match.instances.size(); ++i) {
    const InstanceArrival& ia = arrivals.instances[i];
    const model::CollectiveInstance& inst = match.instances[i];
    if (!ia.used || !ia.gpu || inst.bytes < kLinkMinBytes) continue;
    auto [it, added] = index.try_emplace(inst.comm_id, comms.size());
    if (added) comms.push_back({inst.comm_id, {}, {}, {}, 0});
    CommTransfers& c = comms[it->second];
    int64_t end = std::numeric_limits<int64_t>::min();
    for (std::size_t m = inst.first_member; m < inst.first_member + inst.nmembers; ++m) {
      const model::InstanceMember& mem = match.members[m];
      const model::CallEvent& call = job.ranks[mem.rank_index].calls[mem.call_index];
      end = std::max(end, call.gpu_end_ns + clocks.at(mem.rank_index));
      if (added) c.hosts.push_back(host_of[mem.rank_index]);
    }
    if (added) {
      std::sort(c.hosts.begin(), c.hosts.end());
      c.hosts.erase(std::unique(c.hosts.begin(), c.hosts.end()), c.hosts.end());
    }
    const double t = static_cast<double>(std::max<int64_t>(0, end - ia.last_ns));
    c.per_byte.push_back(t / static_cast<double>(inst.bytes));
    c.ns.push_back(t);
  }
  std::vector<CommTransfers> out;
  for (CommTransfers& c : comms) {
    if (c.hosts.size() < 2 || c.per_byte.size() < kLinkMinInstances) continue;
    c.median_per_byte = stats::median(c.per_byte);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::vector<SlowLink> SlowLink::find(const model::JobTrace& job, const model::MatchResult& match,
                                     const model::ClockAlignment& clocks,
                                     const Arrivals& arrivals) {
  std::vector<std::string> hosts;
  std::map<std::string, uint32_t> host_id;
  std::vector<uint32_t> host_of(job.ranks.size());
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    auto [it, added] =
        host_id.try_emplace(job.ranks[r].info.host, static_cast<uint32_t>(hosts.size()));
    if (added) hosts.push_back(job.ranks[r].info.host);
    host_of[r] = it->second;
  }
  const std::vector<CommTransfers> comms = transfers_by_comm(job, match, clocks, arrivals, host_of);
  if (comms.size() < 2) return {};

  // Candidates, keyed by their set of communicators (hosts alike cannot be told apart).
  std::map<std::vector<std::size_t>, std::vector<uint32_t>> candidates;
  for (uint32_t h = 0; h < hosts.size(); ++h) {
    std::vector<std::size_t> in;
    std::vector<double> out_pb;
    for (std::size_t c = 0; c < comms.size(); ++c) {
      if (contains(comms[c].hosts, h)) {
        in.push_back(c);
      } else {
        out_pb.push_back(comms[c].median_per_byte);
      }
    }
    if (in.empty() || out_pb.empty()) continue;
    const double base = stats::median(out_pb);
    const bool all_slow = std::all_of(in.begin(), in.end(), [&](std::size_t c) {
      return comms[c].median_per_byte >= kLinkSlowdown * base;
    });
    if (base > 0 && all_slow) candidates[in].push_back(h);
  }

  std::vector<SlowLink> links;
  for (const auto& [in, hs] : candidates) {
    SlowLink l;
    l.host = hosts[hs.front()];
    for (std::size_t i = 1; i < hs.size(); ++i) l.hosts_alike.push_back(hosts[hs[i]]);
    std::vector<double> in_pb, in_ns, out_pb, out_ns;
    for (std::size_t c = 0; c < comms.size(); ++c) {
      const bool mine = std::binary_search(in.begin(), in.end(), c);
      (mine ? in_pb : out_pb).push_back(comms[c].median_per_byte);
      auto& ns = mine ? in_ns : out_ns;
      ns.insert(ns.end(), comms[c].ns.begin(), comms[c].ns.end());
      if (mine) l.comms.push_back(comms[c].id);
    }
    l.comms_without = out_pb.size();
    l.slowdown = stats::median(in_pb) / stats::median(out_pb);
    l.transfer_ns = stats::median(std::move(in_ns));
    l.others_transfer_ns = stats::median(std::move(out_ns));
    links.push_back(std::move(l));
  }
  std::sort(links.begin(), links.end(),
            [](const SlowLink& a, const SlowLink& b) { return a.slowdown > b.slowdown; });
  return links;
}

}  // namespace ncclwatch::analysis

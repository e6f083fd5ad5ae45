// ring-extra-crossings, rank-disagreement and node-count-mismatch: what the rings, channel
// counts and comm lines say about how ranks were laid out over nodes.
#include <algorithm>
#include <set>

#include "topology/checks.h"

namespace ncclwatch::topology {
namespace {

struct FullRing {
  int channel = -1;
  std::vector<int> ranks;
  std::string evidence;
};

// Whole rings: rank 0's "Channel NN/MM :" lines when not cut, else rebuilt from every rank's
// "Ring NN : prev -> self -> next" when all ranks logged theirs.
std::vector<FullRing> full_rings(const LogSet& logs, const CommContext& c) {
  std::vector<FullRing> out;
  std::set<int> have;
  std::map<int, std::map<int, int>> next;  // channel -> self -> next
  for (std::size_t m : c.group->members) {
    const RankView& r = logs.ranks[m];
    for (const RingOrder& o : r.rings)
      if (!o.truncated && static_cast<int>(o.ranks.size()) == c.nranks &&
          have.insert(o.channel).second)
        out.push_back({o.channel, o.ranks, r.host + ": " + o.evidence});
    for (const RingNeighbors& n : r.ring_neighbors) next[n.channel][n.self] = n.next;
  }
  for (const auto& [channel, nx] : next) {
    if (have.count(channel) != 0 || static_cast<int>(nx.size()) != c.nranks) continue;
    FullRing ring{
        channel, {}, "Ring " + std::to_string(channel) + " (rebuilt from every rank's Ring line)"};
    int cur = nx.begin()->first;
    for (int i = 0; i < c.nranks; ++i) {
      ring.ranks.push_back(cur);
      auto it = nx.find(cur);
      if (it == nx.end()) break;
      cur = it->second;
    }
    if (static_cast<int>(ring.ranks.size()) == c.nranks && cur == ring.ranks.front())
      out.push_back(std::move(ring));
  }
  return out;
}

TopoFinding finding(const char* kind, model::Severity sev, const CommContext& c) {
  TopoFinding f;
  f.kind = kind;
  f.severity = sev;
  f.comm = c.name;
  return f;
}

}  // namespace

void check_rings(const LogSet& logs, const std::vector<CommContext>& comms,
                 std::vector<TopoFinding>& out) {
  for (const CommContext& c : comms) {
    if (c.group == nullptr || c.nranks < 3 || !hosts_trusted(c)) continue;
    std::vector<int> bad_channels;
    std::string evidence;
    int worst = 0, nodes_seen = 0;
    for (const FullRing& ring : full_rings(logs, c)) {
      std::set<std::string> nodes;
      bool all_known = true;
      for (int r : ring.ranks) {
        auto h = c.host_of.find(r);
        if (h == c.host_of.end())
          all_known = false;
        else
          nodes.insert(h->second);
      }
      if (!all_known || nodes.size() < 2) continue;
      int crossings = 0;
      for (std::size_t i = 0; i < ring.ranks.size(); ++i)
        crossings +=
            c.host_of.at(ring.ranks[i]) != c.host_of.at(ring.ranks[(i + 1) % ring.ranks.size()]);
      // A node-contiguous order enters and leaves each node once: one crossing per node.
      if (crossings > static_cast<int>(nodes.size())) {
        bad_channels.push_back(ring.channel);
        if (crossings > worst) {
          worst = crossings;
          nodes_seen = static_cast<int>(nodes.size());
          evidence = ring.evidence;
        }
      }
    }
    if (bad_channels.empty()) continue;
    TopoFinding f = finding("ring-extra-crossings", model::Severity::kWarning, c);
    f.message = std::to_string(bad_channels.size()) + " ring(s) (channels " +
                rank_list(bad_channels) + ") cross between nodes up to " + std::to_string(worst) +
                " times where " + std::to_string(nodes_seen) + " would do";
    f.evidence = evidence;
    f.advice =
        "each extra crossing puts the ring on the network twice more: check NCCL_GRAPH_FILE / "
        "NCCL_TOPO_FILE "
        "overrides, NCCL_CROSS_NIC, that NCCL sees each node's GPUs as one node (NCCL_HOSTID, "
        "node-count "
        "findings), and launch ranks node-contiguously (Slurm --distribution=block, mpirun "
        "--map-by slot)";
    out.push_back(std::move(f));
  }
}

void check_agreement(const LogSet& logs, const std::vector<CommContext>& comms,
                     std::vector<TopoFinding>& out) {
  for (const CommContext& c : comms) {
    if (c.group == nullptr || c.nranks <= 0 || c.group->members.size() < 2) continue;
    // Each property: value -> ranks reporting it.
    struct Property {
      const char* what;
      std::map<std::string, std::vector<int>> values;
      std::map<std::string, long> weight;  // channels the value stands for (ties go to the larger)
    };
    Property props[3] = {
        {"coll channels", {}, {}}, {"tree channels", {}, {}}, {"graph search result", {}, {}}};
    for (std::size_t m : c.group->members) {
      const RankView& r = logs.ranks[m];
      if (r.coll_channels >= 0) {
        props[0].values[std::to_string(r.coll_channels)].push_back(r.rank);
        props[0].weight[std::to_string(r.coll_channels)] = r.coll_channels;
      }
      if (r.tree_channels >= 0) {
        props[1].values[std::to_string(r.tree_channels)].push_back(r.rank);
        props[1].weight[std::to_string(r.tree_channels)] = r.tree_channels;
      }
      if (!r.graphs.empty()) {
        std::string sig;
        for (const GraphSearch& g : r.graphs)
          sig += (sig.empty() ? "" : "; ") + std::string("pattern ") + std::to_string(g.pattern) +
                 " nChannels " + std::to_string(g.nchannels) + " " + g.type_intra + "/" +
                 g.type_inter;
        long channels = 0;
        for (const GraphSearch& g : r.graphs) channels += g.nchannels;
        props[2].values[sig].push_back(r.rank);
        props[2].weight[sig] = channels;
      }
    }
    std::vector<std::string> parts;
    std::vector<int> minority;
    std::string evidence;
    for (Property& p : props) {
      if (p.values.size() < 2) continue;
      // The reference value: the one most ranks report; on a tie the larger number (NCCL
      // settles on the weakest, so the smaller one is what holds the others back).
      auto majority =
          std::max_element(p.values.begin(), p.values.end(), [&p](const auto& a, const auto& b) {
            if (a.second.size() != b.second.size()) return a.second.size() < b.second.size();
            return p.weight[a.first] < p.weight[b.first];
          });
      std::string part = std::string(p.what) + ": ";
      bool first = true;
      for (const auto& [value, ranks] : p.values) {
        part += (first ? "" : " vs ") + value + " on rank(s) " + rank_list(ranks);
        first = false;
        if (value != majority->first) minority.insert(minority.end(), ranks.begin(), ranks.end());
      }
      parts.push_back(part);
      if (evidence.empty())
        for (std::size_t m : c.group->members) {
          const RankView& r = logs.ranks[m];
          if (std::find(minority.begin(), minority.end(), r.rank) == minority.end()) continue;
          const std::string& line = &p == &props[0]    ? r.coll_line
                                    : &p == &props[1]  ? r.trees_line
                                    : r.graphs.empty() ? r.comm_line
                                                       : r.graphs.front().evidence;
          evidence = r.host + ": " + line;
          break;
        }
    }
    if (parts.empty()) continue;
    TopoFinding f = finding("rank-disagreement", model::Severity::kWarning, c);
    f.ranks = minority;
    std::sort(f.ranks.begin(), f.ranks.end());
    f.ranks.erase(std::unique(f.ranks.begin(), f.ranks.end()), f.ranks.end());
    f.message = "ranks of one comm disagree: ";
    for (std::size_t i = 0; i < parts.size(); ++i) f.message += (i ? "; " : "") + parts[i];
    f.evidence = evidence;
    f.advice =
        "the ranks see different hardware or settings and NCCL settles on the weakest: compare the "
        "nodes "
        "(`nvidia-smi topo -m`, NIC count, driver and NCCL versions) and the NCCL_* environment of "
        "each rank "
        "(NCCL_MIN/MAX_NCHANNELS, NCCL_ALGO, NCCL_P2P_*, NCCL_IB_HCA)";
    out.push_back(std::move(f));
  }
}

void check_node_count(const LogSet& logs, const std::vector<CommContext>& comms,
                      std::vector<TopoFinding>& out) {
  bool any_multi_host = false;
  std::set<std::string> all_hosts;
  std::vector<const CommContext*> single_host;
  for (const CommContext& c : comms) {
    if (c.group == nullptr || c.nranks <= 0) continue;
    std::set<std::string> hosts;
    for (const auto& [r, h] : c.host_of) hosts.insert(h);
    all_hosts.insert(hosts.begin(), hosts.end());
    if (hosts.size() >= 2)
      any_multi_host = true;
    else if (hosts.size() == 1)
      single_host.push_back(&c);

    // One rank number claimed by two processes: two comms that never joined, same size.
    std::map<int, std::set<std::string>> claims;
    for (std::size_t m : c.group->members) {
      const RankView& r = logs.ranks[m];
      claims[r.rank].insert(r.host + ":" + std::to_string(r.pid));
    }
    std::vector<int> dup;
    for (const auto& [rank, who] : claims)
      if (who.size() > 1) dup.push_back(rank);
    if (!dup.empty()) {
      TopoFinding f = finding("node-count-mismatch", model::Severity::kCritical, c);
      f.ranks = dup;
      f.message = "rank(s) " + rank_list(dup) + " of a " + std::to_string(c.nranks) +
                  "-rank comm reported by more than one process: separate jobs that never joined";
      f.evidence = logs.ranks[c.group->members.front()].host + ": " +
                   logs.ranks[c.group->members.front()].comm_line;
      f.advice =
          "each node formed its own communicator: check the rendezvous (MASTER_ADDR/MASTER_PORT, "
          "--rdzv-endpoint, NCCL_COMM_ID) and that --nnodes / world size match on every node";
      out.push_back(std::move(f));
      continue;
    }
    if (c.nnodes <= 0) continue;
    int n = static_cast<int>(hosts.size());
    bool complete = static_cast<int>(c.host_of.size()) >= c.nranks;
    // Hosts the job's own records name, when they disagree with NCCL (logs may lack ranks).
    std::set<std::string> job_hosts;
    for (const auto& [r, h] : c.job_host_of) job_hosts.insert(h);
    int nj = static_cast<int>(job_hosts.size());
    bool job_complete = static_cast<int>(c.job_host_of.size()) >= c.nranks;
    int shown = -1;
    if (n > c.nnodes || (complete && n < c.nnodes))
      shown = n;
    else if (nj > c.nnodes || (job_complete && nj > 0 && nj < c.nnodes))
      shown = nj;
    if (shown < 0) continue;
    TopoFinding f =
        finding("node-count-mismatch",
                shown > c.nnodes ? model::Severity::kCritical : model::Severity::kWarning, c);
    for (const auto& [r, h] : c.host_of) f.ranks.push_back(r);
    f.message = "NCCL counts " + std::to_string(c.nnodes) + " node(s) in a " +
                std::to_string(c.nranks) + "-rank comm, the ranks' host names say " +
                std::to_string(shown);
    f.evidence = logs.ranks[c.group->members.front()].host + ": " +
                 logs.ranks[c.group->members.front()].comm_line;
    f.advice = shown > c.nnodes ? "NCCL believes ranks on different machines share a node (same "
                                  "NCCL_HOSTID, or cloned boot ids "
                                  "in VMs/containers): it will try SHM/P2P across machines; unset "
                                  "NCCL_HOSTID or make it differ"
                                : "different machines report the same host name (containers with a "
                                  "fixed hostname?): give each "
                                  "node its own hostname so logs, launchers and NCCL agree";
    out.push_back(std::move(f));
  }
  // Logs from several hosts, but no comm spans two of them: the nodes never joined.
  if (!any_multi_host && all_hosts.size() >= 2 && single_host.size() >= 2) {
    bool all_single_node = true;
    for (const CommContext* c : single_host) all_single_node = all_single_node && c->nnodes <= 1;
    if (all_single_node) {
      TopoFinding f =
          finding("node-count-mismatch", model::Severity::kCritical, *single_host.front());
      f.comm = "(all)";
      f.message = std::to_string(all_hosts.size()) +
                  " hosts logged, but every communicator stays on one host: " +
                  "the nodes never joined one job";
      const RankView& r = logs.ranks[single_host.front()->group->members.front()];
      f.evidence = r.host + ": " + r.comm_line;
      f.advice =
          "each node formed its own communicator: check the rendezvous (MASTER_ADDR/MASTER_PORT, "
          "--rdzv-endpoint, NCCL_COMM_ID) and that --nnodes / world size match on every node";
      out.push_back(std::move(f));
    }
  }
}

}  // namespace ncclwatch::topology

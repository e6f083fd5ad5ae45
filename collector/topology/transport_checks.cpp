// intra-node-not-p2p, net-socket and nic-bottleneck: what the transport lines say.
#include <algorithm>
#include <set>
#include <tuple>

#include "topology/checks.h"

namespace ncclwatch::topology {
namespace {

// Whether two comm ranks share a node: by host when both are known, else by NCCL's own count
// (a comm NCCL calls single-node has all ranks on one node). -1 unknown.
int same_node(const CommContext& c, int a, int b) {
  auto ha = c.host_of.find(a), hb = c.host_of.find(b);
  if (ha != c.host_of.end() && hb != c.host_of.end()) return ha->second == hb->second ? 1 : 0;
  if (c.nnodes == 1) return 1;
  return -1;
}

// What one comm's transport lines show.
struct LinksSeen {
  std::set<std::tuple<int, int, int>> links;  // channel, from, to
  std::vector<int> ranks;
  std::string evidence;

  void add(const Transport& t, const std::string& host) {
    if (!links.insert({t.channel, t.from, t.to}).second) return;
    ranks.push_back(t.from);
    ranks.push_back(t.to);
    if (evidence.empty()) evidence = host + ": " + t.evidence;
  }
};

struct TransportsSeen {
  LinksSeen shm, net_local, socket;
  // NICs per host: host -> NIC index -> local comm ranks using it.
  std::map<std::string, std::map<int, std::set<int>>> nic_users;
  std::map<std::string, std::string> nic_net;  // host -> net name seen
  std::map<std::string, std::string> nic_evidence;
};

TransportsSeen collect_transports(const LogSet& logs, const CommContext& c) {
  TransportsSeen seen;
  const bool trusted = hosts_trusted(c);
  for (std::size_t m : c.group->members) {
    const RankView& r = logs.ranks[m];
    for (const Transport& t : r.transports) {
      const int same = trusted ? same_node(c, t.from, t.to) : -1;
      // NCCL uses SHM only between ranks it places on one node: no host names needed.
      if (t.via == Via::kShm)
        seen.shm.add(t, r.host);
      else if (t.via == Via::kNet && same == 1)
        seen.net_local.add(t, r.host);
      if (t.via == Via::kNet && t.net.rfind("Socket", 0) == 0) seen.socket.add(t, r.host);
      if (t.via == Via::kNet && t.net_dev >= 0 && same != 1) {
        int local = t.direction == 2 ? t.to : t.from;
        if (t.direction == 0) local = r.rank;
        seen.nic_users[r.host][t.net_dev].insert(local);
        seen.nic_net[r.host] = t.net;
        std::string& evidence = seen.nic_evidence[r.host];
        if (evidence.empty()) evidence = r.host + ": " + t.evidence;
      }
    }
  }
  return seen;
}

// intra-node-not-p2p (SHM, NET inside a node) and net-socket.
void report_links(const CommContext& c, const TransportsSeen& seen, std::vector<TopoFinding>& out) {
  auto emit = [&](const LinksSeen& s, const char* kind, model::Severity sev, std::string message,
                  std::string advice) {
    if (s.links.empty()) return;
    TopoFinding f;
    f.kind = kind;
    f.severity = sev;
    f.comm = c.name;
    f.ranks = s.ranks;
    std::sort(f.ranks.begin(), f.ranks.end());
    f.ranks.erase(std::unique(f.ranks.begin(), f.ranks.end()), f.ranks.end());
    f.message = std::move(message);
    f.evidence = s.evidence;
    f.advice = std::move(advice);
    out.push_back(std::move(f));
  };
  emit(seen.shm, "intra-node-not-p2p", model::Severity::kWarning,
       "GPUs of one node connected through shared memory (SHM), not P2P/NVLink: " +
           std::to_string(seen.shm.links.size()) + " connection(s), ranks " +
           rank_list(seen.shm.ranks),
       "P2P is disabled or unavailable between these GPUs: check NCCL_P2P_DISABLE and "
       "NCCL_P2P_LEVEL "
       "(e.g. NCCL_P2P_LEVEL=SYS if the PCIe path allows it), PCIe ACS/IOMMU settings, and that "
       "containers "
       "share the IPC namespace (--ipc=host); `nvidia-smi topo -m` shows the paths");
  emit(seen.net_local, "intra-node-not-p2p", model::Severity::kCritical,
       "GPUs of one node connected through the network (NET): " +
           std::to_string(seen.net_local.links.size()) + " connection(s), ranks " +
           rank_list(seen.net_local.ranks),
       "NCCL could use neither P2P nor SHM between GPUs of one host: check NCCL_P2P_DISABLE / "
       "NCCL_SHM_DISABLE, "
       "/dev/shm size and sharing between containers (--ipc=host), and that ranks of one host "
       "run in one "
       "container or share its namespaces");
  emit(seen.socket, "net-socket", model::Severity::kWarning,
       "inter-node traffic over TCP sockets (NET/Socket): " +
           std::to_string(seen.socket.links.size()) + " connection(s), ranks " +
           rank_list(seen.socket.ranks),
       "NCCL found no usable InfiniBand/RoCE/EFA device: check NCCL_IB_HCA / NCCL_IB_DISABLE, "
       "that the RDMA "
       "devices (/dev/infiniband) and drivers are visible in the container, NCCL_NET_PLUGIN "
       "(aws-ofi-nccl on "
       "EFA); if sockets are intended, set NCCL_SOCKET_IFNAME to the fastest interface");
}

// nic-bottleneck, per host: its GPUs reach other nodes through fewer NICs than they could.
void report_nic_bottlenecks(const LogSet& logs, const CommContext& c, const TransportsSeen& seen,
                            std::vector<TopoFinding>& out) {
  for (const auto& [host, users] : seen.nic_users) {
    std::set<int> gpus;
    for (const auto& [dev, ranks] : users) gpus.insert(ranks.begin(), ranks.end());
    // GPUs of the comm on this host (all of them need the network, not only those logged).
    int g = 0;
    for (const auto& [rank, h] : c.host_of) g += h == host;
    g = std::max<int>(g, static_cast<int>(gpus.size()));
    int used = static_cast<int>(users.size());
    int available = -1;
    for (const HostNics& n : logs.nics)
      if (n.host == host && n.net == seen.nic_net.at(host))
        available = static_cast<int>(n.devices.size());
    std::string msg;
    model::Severity sev = model::Severity::kWarning;
    if (available > used && used < g) {
      msg = host + ": " + std::to_string(g) + " GPUs reach other nodes through " +
            std::to_string(used) + " of its " + std::to_string(available) + " NICs";
    } else if (g >= 4 * used) {
      msg = host + ": " + std::to_string(g) + " GPUs share " + std::to_string(used) + " NIC(s)" +
            (available > 0 ? " (all it has)" : "");
      if (available > 0 && available <= used) sev = model::Severity::kInfo;
    } else {
      continue;
    }
    TopoFinding f;
    f.kind = "nic-bottleneck";
    f.severity = sev;
    f.comm = c.name;
    f.ranks.assign(gpus.begin(), gpus.end());
    f.message = msg;
    f.evidence = seen.nic_evidence.at(host);
    f.advice =
        "inter-node bandwidth is capped by the NICs in use: check NCCL_IB_HCA (it may exclude "
        "NICs), that every "
        "NIC is up (ibstat), NCCL_CROSS_NIC, and NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS; with "
        "fewer NICs than "
        "GPUs, expect at most the NICs' bandwidth";
    out.push_back(std::move(f));
  }
}

}  // namespace

void check_transports(const LogSet& logs, const std::vector<CommContext>& comms,
                      std::vector<TopoFinding>& out) {
  for (const CommContext& c : comms) {
    if (c.group == nullptr) continue;
    const TransportsSeen seen = collect_transports(logs, c);
    report_links(c, seen, out);
    report_nic_bottlenecks(logs, c, seen, out);
  }
}

}  // namespace ncclwatch::topology

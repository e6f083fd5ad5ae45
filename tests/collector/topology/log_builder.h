// Writes synthetic NCCL_DEBUG=INFO logs of a whole job, one text per rank process, in the line
// forms of a chosen NCCL version, with optional faults. The tests feed them to the parser and
// the checks; scenarios say in advance which finding each must produce.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace ncclwatch::topology::testing {

enum class Style { k2_4, k2_5, k2_7, k2_12, k2_19, k2_28 };

struct JobSpec {
  Style style = Style::k2_19;
  int nodes = 2;
  int gpus = 4;  // per node
  int channels = 2;
  int nics = 4;            // per node (NET/IB : Using ...)
  std::string net = "IB";  // "IB", "IBext_v8", "Socket"
  // Faults
  std::string intra =
      "P2P/IPC/read";  // transport between GPUs of one node ("SHM/direct/direct", "NET/IB/0")
  bool interleaved_ring = false;  // ring hops between nodes at every step
  bool one_nic = false;           // every GPU of a node uses NIC 0
  int odd_channels_node = -1;     // this node's ranks report half the channels
  int nnodes_override = -1;       // NCCL's nNodes on the comm lines
  std::string same_host;          // every node reports this host name
  bool separate_jobs = false;     // each node forms its own comm of `gpus` ranks
  bool truncate_rings = false;    // cut ring orders with "..." (2.19+ long lines)
  int extra_comms = 0;            // one more comm per node of its GPUs (e.g. tensor parallel)
};

class LogBuilder {
 public:
  explicit LogBuilder(JobSpec spec) : s_(std::move(spec)) {}

  // file name -> text, one file per rank process.
  std::map<std::string, std::string> build() const {
    std::map<std::string, std::string> files;
    int world = s_.nodes * s_.gpus;
    for (int g = 0; g < world; ++g) {
      int node = g / s_.gpus, local = g % s_.gpus;
      std::string host = s_.same_host.empty() ? "node" + std::to_string(node) : s_.same_host;
      int pid = 1000 + g;
      std::string text;
      Comm world_comm;
      if (s_.separate_jobs) {
        world_comm = {local, s_.gpus, 1, std::vector<int>{}, 0x1000 + node};
        for (int i = 0; i < s_.gpus; ++i) world_comm.members.push_back(node * s_.gpus + i);
      } else {
        world_comm = {g, world, s_.nnodes_override > 0 ? s_.nnodes_override : s_.nodes, {}, 0xabc};
        for (int i = 0; i < world; ++i) world_comm.members.push_back(i);
      }
      comm_lines(text, host, pid, g, world_comm, 0);
      for (int e = 0; e < s_.extra_comms; ++e) {
        Comm local_comm{local, s_.gpus, 1, {}, 0x5000 + node * 16 + e};
        for (int i = 0; i < s_.gpus; ++i) local_comm.members.push_back(node * s_.gpus + i);
        comm_lines(text, host, pid, g, local_comm, e + 1);
      }
      files["nccl-debug." + host + "." + std::to_string(pid) + ".log"] += text;
    }
    return files;
  }

 private:
  struct Comm {
    int rank;  // in the comm
    int nranks;
    int nnodes;
    std::vector<int> members;  // global ranks by comm rank
    long id;
  };

  bool at_least(Style v) const { return static_cast<int>(s_.style) >= static_cast<int>(v); }
  int node_of(int global) const { return global / s_.gpus; }
  int local_of(int global) const { return global % s_.gpus; }

  static std::string fmt(const char* f, long a = 0, long b = 0, long c = 0, long d = 0,
                         long e = 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, f, a, b, c, d, e);
    return buf;
  }

  // Comm ranks in ring order for channel c.
  std::vector<int> ring(const Comm& c, int channel) const {
    std::vector<int> order;
    int n = c.nranks;
    if (s_.interleaved_ring && c.nnodes > 1) {
      for (int l = 0; l < s_.gpus; ++l)
        for (int nd = 0; nd < s_.nodes; ++nd) order.push_back(nd * s_.gpus + l);
      return order;
    }
    // Node-contiguous, entering each node through another GPU on each channel, as NCCL's rings
    // do to spread the traffic over all NICs.
    int per_node = c.nnodes > 1 ? s_.gpus : n;
    for (int base = 0; base < n; base += per_node)
      for (int i = 0; i < per_node && base + i < n; ++i)
        order.push_back(base + (i + channel) % per_node);
    return order;
  }

  void comm_lines(std::string& text, const std::string& host, int pid, int global, const Comm& c,
                  int which) const {
    int dev = local_of(global);
    int tid = 2000 + global * 8 + which;
    long ptr = 0x55550000L + global * 0x100 + which;
    auto line = [&](const std::string& msg) {
      text += host + ":" + std::to_string(pid) + ":" + std::to_string(tid) + " [" +
              std::to_string(dev) + "] NCCL INFO " + msg + "\n";
    };
    int channels = s_.channels;
    if (s_.odd_channels_node >= 0 && node_of(global) == s_.odd_channels_node)
      channels = std::max(1, channels / 2);
    if (which == 0) {
      if (global == 0) line(version());
      if (s_.net == "Socket")
        line("NET/Socket : Using [0]eth0:10.0.0." + std::to_string(node_of(global)) + "<0>");
      else {
        std::string nics = "NET/" + s_.net + " : Using";
        for (int i = 0; i < s_.nics; ++i)
          nics += " [" + std::to_string(i) + "]mlx5_" + std::to_string(i) + ":1/IB";
        line(nics + " ; OOB eth0:10.0.0." + std::to_string(node_of(global)) + "<0>");
      }
    }
    if (at_least(Style::k2_19))
      line(fmt("comm 0x%lx rank %ld nRanks %ld nNodes %ld localRanks %ld localRank ", ptr, c.rank,
               c.nranks, c.nnodes, c.nnodes > 1 ? s_.gpus : c.nranks) +
           std::to_string(local_of(global)) + " MNNVL 0");
    // Ring orders: comm rank 0 only.
    if (c.rank == 0)
      for (int ch = 0; ch < channels; ++ch) {
        std::string l = fmt("Channel %02ld/%02ld :", ch, channels);
        auto order = ring(c, ch);
        std::string body;
        for (int r : order) body += fmt(" %4ld", r);
        if (s_.truncate_rings && body.size() > 40) body = body.substr(0, 40) + "...";
        line(l + body);
      }
    // Trees: a chain per node, nodes chained through their first GPU.
    {
      std::string t = "Trees";
      int up = c.rank == 0 ? -1 : c.rank - 1, down = c.rank + 1 < c.nranks ? c.rank + 1 : -1;
      for (int ch = 0; ch < channels; ++ch) {
        std::string fwd = fmt("%ld/-1/-1->%ld->%ld", down, c.rank, up);
        if (s_.style == Style::k2_4) fwd = fmt("%ld->%ld->%ld/-1/-1", up, c.rank, down);
        if (s_.style == Style::k2_5) fwd += fmt("|%ld->%ld->%ld/-1/-1", up, c.rank, down);
        t += fmt(" [%ld] ", ch) + fwd;
      }
      line(t);
    }
    // Graph search (GRAPH subsystem).
    if (at_least(Style::k2_5)) {
      const char* bw = at_least(Style::k2_12) ? "bw" : "speed";
      line(fmt("Pattern 4, crossNic 0, nChannels %ld, ", channels) + bw +
           " 20.000000/20.000000, type NVL/PIX, sameChannels 1");
      for (int ch = 0; ch < channels; ++ch) {
        std::string l = fmt("%2ld :", ch);
        if (c.nnodes > 1) l += " NET/" + std::to_string(nic_of(global, ch));
        for (int i = 0; i < s_.gpus; ++i) l += " GPU/" + std::to_string(i);
        if (c.nnodes > 1) l += " NET/" + std::to_string(nic_of(global, ch));
        line(" " + l);
      }
    }
    // Ring neighbours (2.19+).
    if (at_least(Style::k2_19))
      for (int ch = 0; ch < channels; ++ch) {
        auto order = ring(c, ch);
        std::size_t at = 0;
        while (order[at] != c.rank) ++at;
        int prev = order[(at + order.size() - 1) % order.size()],
            next = order[(at + 1) % order.size()];
        line(fmt("Ring %02ld : %ld -> %ld -> %ld", ch, prev, c.rank, next));
      }
    if (at_least(Style::k2_7))
      line(
          fmt("%ld coll channels, 0 collnet channels, 0 nvls channels, %ld p2p channels, 2 p2p "
              "channels per peer",
              channels, channels));
    // Transports of the ring: to the next rank, and from the previous one when it is remote.
    for (int ch = 0; ch < channels; ++ch) {
      auto order = ring(c, ch);
      std::size_t at = 0;
      while (order[at] != c.rank) ++at;
      int next = order[(at + 1) % order.size()],
          prev = order[(at + order.size() - 1) % order.size()];
      int gn = c.members[next], gp = c.members[prev];
      if (next != c.rank) {
        if (node_of(gn) == node_of(global) || s_.separate_jobs)
          line(transport(ch, c.rank, global, next, gn, "", s_.intra));
        else
          line(transport(ch, c.rank, global, next, gn, "[send] ", net_detail(global, ch)));
      }
      if (prev != c.rank && node_of(gp) != node_of(global) && !s_.separate_jobs)
        line(transport(ch, prev, gp, c.rank, global, "[receive] ", net_detail(global, ch)));
    }
    if (at_least(Style::k2_19) && c.nnodes > 1) line("Connected all rings");
    // The end of the init.
    std::string done =
        fmt("comm 0x%lx rank %ld nranks %ld cudaDev %ld ", ptr, c.rank, c.nranks, dev);
    if (at_least(Style::k2_12))
      done = "ncclCommInitRank " + done + "nvmlDev " + std::to_string(dev) + " ";
    if (!(s_.style == Style::k2_4)) done += fmt("busId %lx000 ", 0x1b + dev);
    if (at_least(Style::k2_12)) done += fmt("commId 0x%lx ", c.id);
    line(done + "- Init COMPLETE");
  }

  int nic_of(int global, int channel) const {
    if (s_.one_nic) return 0;
    return (local_of(global) + channel * 0) % std::max(1, s_.nics);
  }

  std::string net_detail(int global, int channel) const {
    if (s_.net == "Socket") return "NET/Socket/0";
    return "NET/" + s_.net + "/" + std::to_string(nic_of(global, channel)) + "/GDRDMA";
  }

  std::string transport(int ch, int from, int gfrom, int to, int gto, const std::string& dir,
                        const std::string& via) const {
    auto peer = [&](int r, int g) {
      if (s_.style == Style::k2_4 && !dir.empty()) return std::to_string(r);
      if (at_least(Style::k2_19))
        return std::to_string(r) + "[" + std::to_string(local_of(g)) + "]";
      return std::to_string(r) + fmt("[%lx000]", 0x1b + local_of(g));
    };
    std::string head;
    if (at_least(Style::k2_12))
      head = fmt("Channel %02ld/0 : ", ch);
    else if (at_least(Style::k2_7))
      head = fmt("Channel %02ld : ", ch);
    else
      head = fmt("Ring %02ld : ", ch);
    return head + peer(from, gfrom) + " -> " + peer(to, gto) + " " + dir + "via " + via;
  }

  std::string version() const {
    switch (s_.style) {
      case Style::k2_4:
        return "NCCL version 2.4.8+cuda10.1";
      case Style::k2_5:
        return "NCCL version 2.5.6+cuda10.2";
      case Style::k2_7:
        return "NCCL version 2.7.8+cuda11.0";
      case Style::k2_12:
        return "NCCL version 2.12.12+cuda11.6";
      case Style::k2_19:
        return "NCCL version 2.19.3+cuda12.2";
      case Style::k2_28:
        return "NCCL version 2.28.3+cuda13.0";
    }
    return "";
  }

  JobSpec s_;
};

}  // namespace ncclwatch::topology::testing

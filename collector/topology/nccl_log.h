// What NCCL's own logs and dumps say about a job, as parsed from NCCL_DEBUG=INFO output
// (versions 2.4 to 2.30) and the NCCL_TOPO_DUMP_FILE / NCCL_GRAPH_DUMP_FILE XML. Built by
// LogParser and DumpReader, read by the checks. Everything here came from untrusted text.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/job_trace.h"
#include "topology/nccl_warnings.h"

namespace ncclwatch::topology {

enum class Via : uint8_t { kUnknown = 0, kP2P, kShm, kNet, kNvls, kCollNet };
const char* via_name(Via v);

// One "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA" (or old "Ring 00 : ..." form).
struct Transport {
  int channel = -1;
  int from = -1;  // comm ranks
  int to = -1;
  Via via = Via::kUnknown;
  std::string detail;  // everything after "via ", e.g. "P2P/IPC/read", "NET/IB/0/GDRDMA"
  std::string net;     // NET only: "IB", "IBext_v8", "Socket", "AWS Libfabric", ...
  int net_dev = -1;    // NET only: the NIC index NCCL used
  int direction = 0;   // 0: none printed, 1: [send], 2: [receive]
  std::string evidence;
};

// A ring order: "Channel 00/08 :    0   1   2 ..." (printed by comm rank 0 only).
struct RingOrder {
  int channel = -1;
  int nchannels = -1;
  std::vector<int> ranks;
  bool truncated = false;  // NCCL cut the line ("..."): not the whole ring
  std::string evidence;
};

// "Ring 00 : 2 -> 0 -> 1": the printing rank's neighbours in one ring.
struct RingNeighbors {
  int channel = -1;
  int prev = -1;
  int self = -1;
  int next = -1;
};

// One search result: "Pattern 4, crossNic 0, nChannels 8, bw 40/40, type NVL/PIX, ..." and the
// " 0 : NET/0 GPU/0 ... NET/0" lines under it (or the <graph> element of a graph dump).
struct GraphSearch {
  int pattern = -1;
  int cross_nic = -1;
  int nchannels = -1;
  double bw_intra = 0;  // GB/s per channel
  double bw_inter = 0;
  std::string type_intra;
  std::string type_inter;
  std::vector<std::vector<std::string>> channels;  // tokens: "NET/0", "GPU/3", ...
  std::string evidence;
};

// One rank of one communicator, as its process's log tells it.
struct RankView {
  std::string file;
  std::string host;
  int64_t pid = -1;
  int dev = -1;          // the [dev] of the log prefix (CUDA device)
  std::string comm_ptr;  // "0x55d5e0e0" (the ncclComm_t value)
  std::string comm_id;   // "0x4e3c..." (commId, 2.12+; equal on every rank)
  int rank = -1;
  int nranks = -1;
  int nnodes = -1;       // 2.18+
  int local_ranks = -1;  // 2.18+
  int local_rank = -1;
  std::string bus_id;
  bool complete = false;   // "Init COMPLETE" seen
  int coll_channels = -1;  // "8 coll channels, ..."
  int tree_channels = -1;  // number of [k] entries of the Trees line
  bool nvls = false;       // NVLS set up for this comm
  std::vector<RingOrder> rings;
  std::vector<RingNeighbors> ring_neighbors;
  std::vector<Transport> transports;
  std::vector<GraphSearch> graphs;
  std::string comm_line;   // evidence: the first comm line
  std::string coll_line;   // evidence: the "N coll channels" line
  std::string trees_line;  // evidence: the Trees line
  uint64_t ordinal = 0;    // position among its process's comms (for logs without commId)
};

// The NICs one process reported: "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ...".
struct HostNics {
  std::string host;
  std::string net;                   // "IB", "Socket", "IBext_v8", ...
  std::vector<std::string> devices;  // "mlx5_0:1/IB", "eth0:10.0.0.1<0>"
  std::string evidence;
};

// NCCL_TOPO_DUMP_FILE: what one node's hardware looked like.
struct TopoDump {
  std::string file;
  int gpus = 0;
  int nics = 0;     // <net> elements
  int nvlinks = 0;  // <nvlink> elements
  std::vector<std::string> nic_names;
};

// NCCL_GRAPH_DUMP_FILE: the graphs one rank chose.
struct GraphDump {
  std::string file;
  std::vector<GraphSearch> graphs;
};

struct ParseStats {
  uint64_t files = 0;
  uint64_t lines = 0;       // all lines read
  uint64_t nccl_lines = 0;  // lines with an "NCCL INFO" prefix
  uint64_t used = 0;        // lines that fed the model
  uint64_t unknown = 0;     // NCCL INFO lines of no interest or unknown form (skipped)
  uint64_t malformed = 0;   // lines of a known form that were truncated or garbled (skipped)
  uint64_t warn_lines = 0;  // "NCCL WARN" lines (not counted in nccl_lines)
  uint64_t xml_elements = 0;
};

struct LogSet {
  std::vector<RankView> ranks;
  std::vector<HostNics> nics;
  std::vector<TopoDump> topo_dumps;
  std::vector<GraphDump> graph_dumps;
  std::vector<std::string> versions;  // "2.18.5+cuda12.2", as printed
  NcclWarnings warnings;              // NCCL's WARN lines, grouped
  // NCCL_* variables NCCL reported as set ("set by environment to"; NCCL_DEBUG_SUBSYS=ENV):
  // name -> the distinct values seen (at most 8 each, 128 names).
  std::map<std::string, std::vector<std::string>> settings;
  std::vector<int> driver_versions;  // "cudaDriverVersion 12020": 12020, distinct
  // Unreadable files, bad XML, ...: the readers' one warning type (as trace and Kineto loads).
  std::vector<model::InputProblem> problems;
  ParseStats stats;
};

}  // namespace ncclwatch::topology

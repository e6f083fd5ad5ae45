// One line of an NCCL_DEBUG log, classified and parsed on its own (no state). LogParser ties
// the lines of one thread together into communicators.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topology/nccl_log.h"

namespace ncclwatch::topology {

// "host:pid:tid [dev] NCCL INFO message"; a WARN line has NCCL's source location between the
// two ("host:pid:tid [dev] misc/socket.cc:484 NCCL WARN message") and, from 2.26 on, a time stamp
// in front ("[2025-05-16 10:49:23] host:..."). Launchers may put their own prefix in front
// ("[1,0]<stdout>:", "[155] "); it is ignored.
struct LinePrefix {
  bool ok = false;
  std::string host;
  int64_t pid = -1;
  int64_t tid = -1;
  int dev = -1;
};

enum class LineKind : uint8_t {
  kNotNccl = 0,    // no "NCCL INFO": someone else's output
  kUnknown,        // an NCCL INFO line of no interest or of a form we do not know
  kMalformed,      // a known form, truncated or garbled
  kVersion,        // "NCCL version 2.18.5+cuda12.2"
  kComm,           // "comm 0x.. rank r nRanks n ..." / "... - Init COMPLETE"
  kRingOrder,      // "Channel 00/08 :    0   1   2"
  kRingNeighbors,  // "Ring 00 : 2 -> 0 -> 1"
  kTrees,          // "Trees [0] 1/-1/-1->0->-1 [1] ..."
  kTransport,      // "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"
  kPattern,        // "Pattern 4, crossNic 0, nChannels 8, ..."
  kGraphChannel,   // " 0 : NET/0 GPU/0 GPU/1 NET/0"
  kCollChannels,   // "8 coll channels, 8 nvls channels, ..."
  kNics,           // "NET/IB : Using [0]mlx5_0:1/IB ..."
  kNvls,           // "NVLS comm 0x..", "Connected NVLS", ...
  kSetting,        // "NCCL_IB_HCA set by environment to mlx5_0" (the ENV subsystem)
  kDriverVersion,  // "cudaDriverVersion 12020" (2.13+)
  kKnown,          // recognised, nothing to keep ("Connected all rings", "Bootstrap : ...")
  kWarn,           // "host:pid:tid [dev] misc/socket.cc:484 NCCL WARN message" (any message)
};

struct CommFields {
  std::string ptr;
  std::string comm_id;
  int rank = -1;
  int nranks = -1;
  int nnodes = -1;
  int local_ranks = -1;
  int local_rank = -1;
  int cuda_dev = -1;
  std::string bus_id;
  bool complete = false;
};

struct ParsedLine {
  LineKind kind = LineKind::kNotNccl;
  LinePrefix prefix;
  std::string_view message;  // text after "NCCL INFO " (or "NCCL WARN "), trimmed
  std::string_view site;     // kWarn: NCCL's "file.cc:line" before "NCCL WARN" ("" if none)
  CommFields comm;
  RingOrder ring;
  RingNeighbors neighbors;
  int tree_channels = -1;
  Transport transport;
  GraphSearch pattern;
  std::vector<std::string> graph_channel;
  int coll_channels = -1;
  HostNics nics;
  std::string version;
  std::string setting_name;   // kSetting: "NCCL_IB_HCA"
  std::string setting_value;  // kSetting: "mlx5_0" (NCCL's trailing '.' removed)
  int driver_version = -1;    // kDriverVersion: 12020
};

// Classifies and parses one line (without its '\n'). Never throws on any input.
ParsedLine parse_log_line(std::string_view line);

}  // namespace ncclwatch::topology

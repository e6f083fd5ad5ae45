// NCCL's own WARN lines ("host:pid:tid [dev] misc/socket.cc:484 NCCL WARN ..."), read from its
// debug logs: often the only word on why a job failed or slowed, and written to a file nobody
// reads once the shim has pointed NCCL_DEBUG_FILE into the trace directory. Lines alike (the same
// place in NCCL's source and the same words, numbers aside: peers, ports, pids, addresses) form
// one group, so a thousand "Got completion from peer ..." lines are one line with a count.
// Bounded: kMaxGroups groups, kMaxProcesses processes per group; what is beyond is counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ncclwatch::topology {

struct WarnLine {
  std::string file;
  std::string host;  // as NCCL printed it ("" when the prefix could not be read)
  int64_t pid = -1;
  int dev = -1;
  std::string site;     // "misc/socket.cc:484" ("" in forms without it)
  std::string message;  // after "NCCL WARN " (cut at kMaxMessageBytes)
  std::string line;     // the whole line as read (cut at kMaxMessageBytes)
};

struct WarnGroup {
  std::string key;  // site + message with every number masked
  WarnLine first;   // the group's first line in reading order
  uint64_t count = 0;
  std::vector<std::pair<std::string, int64_t>> processes;  // (host, pid) that wrote one, in order
  bool more_processes = false;  // lines from processes beyond kMaxProcesses, not listed
};

struct NcclWarnings {
  static constexpr std::size_t kMaxGroups = 256;
  static constexpr std::size_t kMaxProcesses = 4096;
  static constexpr std::size_t kMaxMessageBytes = 2048;

  std::vector<WarnGroup> groups;  // in the order their first line was read
  uint64_t lines = 0;             // every WARN line read
  uint64_t ungrouped = 0;         // lines of groups beyond kMaxGroups (counted only)

  // One WARN line of `file` (its fields as parse_log_line read them; `raw`: the line as read).
  void add(const std::string& file, const std::string& host, int64_t pid, int dev,
           std::string_view site, std::string_view message, std::string_view raw);

 private:
  std::map<std::string, std::size_t> index_;                        // key -> groups[i]
  std::vector<std::set<std::pair<std::string, int64_t>>> members_;  // per group: its processes
};

// `message` with every run of digits (and 0x-hex) replaced by '#': the part of a line that says
// what happened, not to whom.
std::string masked(std::string_view message);

}  // namespace ncclwatch::topology

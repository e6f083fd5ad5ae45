// Builds a LogSet from NCCL_DEBUG logs and XML dumps: ties each line to the communicator its
// thread was initializing (lines of one init come from one thread), and groups the per-rank
// views into communicators.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "topology/log_line.h"
#include "topology/nccl_log.h"

namespace ncclwatch::topology {

class LogParser {
 public:
  // One file's text (a log, or an XML dump when it starts with '<').
  void add_text(const std::string& file, std::string_view text);
  // Reads a file (at most 1 GiB); an unreadable file is one line in problems.
  void add_file(const std::string& path);
  // The result; the parser is empty afterwards.
  LogSet take();

 private:
  using Thread = std::tuple<std::string, std::string, int64_t, int64_t>;  // file, host, pid, tid
  using Device = std::tuple<std::string, std::string, int64_t, int>;      // file, host, pid, dev
  void add_line(const std::string& file, std::string_view line);
  std::size_t new_record(const std::string& file, const LinePrefix& p);
  std::size_t record_for(const std::string& file, const ParsedLine& line, bool init_phase);
  void apply_comm(const std::string& file, const ParsedLine& line);

  LogSet set_;
  std::map<Thread, std::size_t> open_;         // thread -> record it is initializing
  std::map<Device, std::size_t> last_on_dev_;  // latest record of a process's device
  std::map<Device, uint64_t> ordinals_;
  std::map<Thread, std::pair<std::size_t, std::size_t>> last_graph_;  // thread -> (record, graph)
};

// Communicators: the RankViews grouped by commId (2.12+), otherwise by (nranks, position among
// the process's communicators). Each group's members are indices into LogSet::ranks.
struct CommGroup {
  std::string key;
  int nranks = -1;
  std::vector<std::size_t> members;
};
std::vector<CommGroup> group_comms(const LogSet& set);

}  // namespace ncclwatch::topology

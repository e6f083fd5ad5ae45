// Builds a LogSet from NCCL_DEBUG logs and XML dumps: ties each line to the communicator its
// thread was initializing (lines of one init come from one thread), and groups the per-rank
// views into communicators.
#pragma once

#include <cstddef>
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
  // Input bounds: a log is read as a stream of lines (memory does not grow with its size), at
  // most kMaxLogBytes of it; a line longer than kMaxLineBytes is cut there (NCCL's own lines are
  // < 4 KiB); an XML dump is parsed whole, so at most kMaxXmlBytes of it.
  static constexpr uint64_t kMaxLogBytes = uint64_t{1} << 30;
  static constexpr std::size_t kMaxLineBytes = std::size_t{64} << 10;
  static constexpr std::size_t kMaxXmlBytes = std::size_t{64} << 20;

  // One file's text: an XML dump when it starts with '<' and holds no NCCL INFO line (a log whose
  // host field is redacted to "<hostname>" also starts with '<'), a log otherwise.
  void add_text(const std::string& file, std::string_view text);
  // Reads a file within the bounds above. Only regular files are read (a FIFO or a device such as
  // /dev/zero is refused without blocking); an unreadable file is one line in problems.
  void add_file(const std::string& path);
  // The result; the parser is empty afterwards.
  LogSet take();

 private:
  using Thread = std::tuple<std::string, std::string, int64_t, int64_t>;  // file, host, pid, tid
  using Device = std::tuple<std::string, std::string, int64_t, int>;      // file, host, pid, dev
  using CommKey =
      std::tuple<std::string, std::string, int64_t, std::string>;  // file, host, pid, ptr
  void add_line(const std::string& file, std::string_view line);
  // open_ is changed only through these, which keep open_refs_ / open_comm_ / threads_of_ in
  // step: a log of thousands of threads stuck in init must not cost a scan of open_ per line.
  void set_open(const Thread& t, std::size_t record);
  void close_thread(std::map<Thread, std::size_t>::iterator it);
  void close_record(std::size_t record);
  void index_comm(std::size_t record);
  void add_xml(const std::string& file, std::string_view text);
  void end_file(const std::string& file);
  std::size_t new_record(const std::string& file, const LinePrefix& p);
  std::size_t record_for(const std::string& file, const ParsedLine& line, bool init_phase);
  void apply_comm(const std::string& file, const ParsedLine& line);

  LogSet set_;
  std::map<Thread, std::size_t> open_;           // thread -> record it is initializing
  std::vector<uint32_t> open_refs_;              // per record: open_ entries pointing at it
  std::vector<std::vector<Thread>> threads_of_;  // per record: threads once open on it
  std::map<CommKey, std::size_t> open_comm_;     // open record of a process's comm pointer
  std::map<Device, std::size_t> last_on_dev_;    // latest record of a process's device
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

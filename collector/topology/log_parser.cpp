#include "topology/log_parser.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "topology/dump_reader.h"
#include "topology/text_scan.h"

namespace ncclwatch::topology {

namespace {

// What a file's first bytes say it is: an NCCL XML dump starts with '<' (after blanks), but so
// does a log pasted with its host field redacted ("<hostname>:924:924 [5] NCCL INFO ..."): the
// log's NCCL INFO lines decide.
bool looks_like_xml(std::string_view head) {
  std::string_view t = scan::trim(head.substr(0, 256));
  return !t.empty() && t.front() == '<' && head.find("NCCL INFO") == std::string_view::npos;
}

// Opens `path` for reading without blocking on a FIFO and without reading a device; -1 and
// `why` when it is not a readable regular file.
int open_regular(const std::string& path, std::string& why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    why = std::string("cannot be read: ") + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file (a FIFO, socket or device is not read): skipped";
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// read(2) that retries on EINTR.
ssize_t read_some(int fd, char* out, std::size_t size) {
  for (;;) {
    const ssize_t n = ::read(fd, out, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

}  // namespace

void LogParser::add_file(const std::string& path) {
  std::string why;
  const int fd = open_regular(path, why);
  if (fd < 0) {
    set_.problems.push_back({path, why});
    return;
  }
  ++set_.stats.files;
  std::vector<char> buf(std::size_t{1} << 16);
  std::string line;    // a line split across reads (at most kMaxLineBytes are kept)
  std::string xml;     // the whole file, once it is known to be XML
  uint64_t total = 0;  // bytes read
  uint64_t cut_lines = 0;
  bool decided = false, is_xml = false, cut = false;
  for (;;) {
    const ssize_t n = read_some(fd, buf.data(), buf.size());
    if (n < 0) {
      set_.problems.push_back({path, "read error after " + std::to_string(total) + " bytes: " +
                                         std::strerror(errno) + " (kept what came before)"});
      break;
    }
    if (n == 0) break;
    std::string_view chunk(buf.data(), static_cast<std::size_t>(n));
    total += chunk.size();
    if (!decided) {
      decided = true;
      is_xml = looks_like_xml(chunk);
    }
    if (is_xml) {
      if (xml.size() + chunk.size() > kMaxXmlBytes) {
        set_.problems.push_back({path, "XML larger than " + std::to_string(kMaxXmlBytes >> 20) +
                                           " MiB: read the first " +
                                           std::to_string(kMaxXmlBytes >> 20) + " MiB"});
        xml.append(chunk.substr(0, kMaxXmlBytes - xml.size()));
        break;
      }
      xml.append(chunk);
      continue;
    }
    while (!chunk.empty()) {
      const std::size_t nl = chunk.find('\n');
      const std::string_view piece = chunk.substr(0, nl);
      if (line.size() + piece.size() > kMaxLineBytes) {
        if (!cut) ++cut_lines;
        cut = true;
        line.append(piece.substr(0, kMaxLineBytes - line.size()));
      } else {
        line.append(piece);
      }
      if (nl == std::string_view::npos) break;
      add_line(path, line);
      line.clear();
      cut = false;
      chunk.remove_prefix(nl + 1);
    }
    if (total >= kMaxLogBytes) {
      set_.problems.push_back({path, "larger than " + std::to_string(kMaxLogBytes >> 30) +
                                         " GiB, read the first " +
                                         std::to_string(kMaxLogBytes >> 30) + " GiB"});
      break;
    }
  }
  ::close(fd);
  if (is_xml) {
    add_xml(path, xml);
    return;
  }
  if (!line.empty()) add_line(path, line);
  if (cut_lines > 0)
    set_.problems.push_back({path, std::to_string(cut_lines) + " line(s) longer than " +
                                       std::to_string(kMaxLineBytes >> 10) + " KiB, cut there"});
  end_file(path);
}

void LogParser::add_text(const std::string& file, std::string_view text) {
  ++set_.stats.files;
  if (looks_like_xml(text.substr(0, std::size_t{1} << 16))) {
    add_xml(file, text);
    return;
  }
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    add_line(file, line);
  }
  end_file(file);
}

void LogParser::add_xml(const std::string& file, std::string_view text) {
  if (!read_dump(file, text, set_))
    set_.problems.push_back({file, "XML, but not an NCCL topology or graph dump"});
}

void LogParser::end_file(const std::string& file) {
  // Inits still open at the end of a file were cut short (crash, hang, truncated copy).
  for (auto it = open_.begin(); it != open_.end();) {
    auto here = it++;
    if (std::get<0>(here->first) == file) close_thread(here);
  }
}

void LogParser::index_comm(std::size_t record) {
  const RankView& r = set_.ranks[record];
  if (!r.comm_ptr.empty() && open_refs_[record] > 0)
    open_comm_.try_emplace(CommKey{r.file, r.host, r.pid, r.comm_ptr}, record);
}

void LogParser::set_open(const Thread& t, std::size_t record) {
  auto [it, fresh] = open_.try_emplace(t, record);
  if (!fresh) {
    if (it->second == record) return;
    const std::size_t old = it->second;
    it->second = record;
    if (--open_refs_[old] == 0) close_record(old);
  }
  ++open_refs_[record];
  threads_of_[record].push_back(t);
  index_comm(record);
}

void LogParser::close_thread(std::map<Thread, std::size_t>::iterator it) {
  const std::size_t record = it->second;
  open_.erase(it);
  if (--open_refs_[record] == 0) close_record(record);
}

// The record is no longer open on any thread: forget its comm pointer and thread list.
void LogParser::close_record(std::size_t record) {
  const RankView& r = set_.ranks[record];
  if (!r.comm_ptr.empty()) {
    auto it = open_comm_.find(CommKey{r.file, r.host, r.pid, r.comm_ptr});
    if (it != open_comm_.end() && it->second == record) open_comm_.erase(it);
  }
  threads_of_[record].clear();
  threads_of_[record].shrink_to_fit();
}

std::size_t LogParser::new_record(const std::string& file, const LinePrefix& p) {
  RankView r;
  r.file = file;
  r.host = p.host;
  r.pid = p.pid;
  r.dev = p.dev;
  Device d{file, p.host, p.pid, p.dev};
  r.ordinal = ordinals_[d]++;
  set_.ranks.push_back(std::move(r));
  open_refs_.push_back(0);
  threads_of_.emplace_back();
  std::size_t index = set_.ranks.size() - 1;
  last_on_dev_[d] = index;
  return index;
}

// The record a line belongs to: the comm this thread is initializing; otherwise, for lines
// printed after init (2.19+ connects send/recv peers lazily, from the caller's thread), the
// latest comm of the process's device; init-phase lines with neither start a new record (logs
// before 2.18 print nothing at the start of an init).
std::size_t LogParser::record_for(const std::string& file, const ParsedLine& line,
                                  bool init_phase) {
  const LinePrefix& p = line.prefix;
  Thread t{file, p.host, p.pid, p.tid};
  if (auto it = open_.find(t); it != open_.end()) return it->second;
  if (!init_phase) {
    if (auto it = last_on_dev_.find(Device{file, p.host, p.pid, p.dev}); it != last_on_dev_.end())
      return it->second;
  }
  std::size_t r = new_record(file, p);
  set_open(t, r);
  return r;
}

void LogParser::apply_comm(const std::string& file, const ParsedLine& line) {
  const LinePrefix& p = line.prefix;
  const CommFields& f = line.comm;
  Thread t{file, p.host, p.pid, p.tid};
  std::size_t index = SIZE_MAX;
  if (auto it = open_.find(t); it != open_.end()) {
    const RankView& r = set_.ranks[it->second];
    if (r.comm_ptr.empty() || r.comm_ptr == f.ptr) index = it->second;
  }
  if (index == SIZE_MAX) {
    // The same comm's init may have started on another thread of the process.
    if (auto it = open_comm_.find(CommKey{file, p.host, p.pid, f.ptr}); it != open_comm_.end())
      index = it->second;
  }
  if (index == SIZE_MAX) index = new_record(file, p);
  RankView& r = set_.ranks[index];
  if (r.comm_ptr.empty()) {
    r.comm_ptr = f.ptr;
    index_comm(index);
  }
  if (r.comm_line.empty()) r.comm_line = std::string(line.message);
  if (!f.comm_id.empty()) r.comm_id = f.comm_id;
  r.rank = f.rank;
  r.nranks = f.nranks;
  if (f.nnodes > 0) r.nnodes = f.nnodes;
  if (f.local_ranks > 0) r.local_ranks = f.local_ranks;
  if (f.local_rank >= 0) r.local_rank = f.local_rank;
  if (!f.bus_id.empty()) r.bus_id = f.bus_id;
  last_on_dev_[Device{file, p.host, p.pid, p.dev}] = index;
  if (f.complete) {
    r.complete = true;
    // This thread's init is over; drop every open entry pointing at it.
    const std::vector<Thread> threads = threads_of_[index];
    for (const Thread& th : threads) {
      auto it = open_.find(th);
      if (it != open_.end() && it->second == index) close_thread(it);
    }
  } else {
    set_open(t, index);
  }
}

void LogParser::add_line(const std::string& file, std::string_view line) {
  ++set_.stats.lines;
  ParsedLine p = parse_log_line(line);
  if (p.kind == LineKind::kWarn) {
    ++set_.stats.warn_lines;
    set_.warnings.add(file, p.prefix.host, p.prefix.pid, p.prefix.dev, p.site, p.message, line);
    return;
  }
  if (p.kind != LineKind::kNotNccl && p.prefix.ok) ++set_.stats.nccl_lines;
  if (p.kind == LineKind::kNotNccl) return;
  Thread t{file, p.prefix.host, p.prefix.pid, p.prefix.tid};
  switch (p.kind) {
    case LineKind::kNotNccl:
      return;
    case LineKind::kUnknown:
    case LineKind::kKnown:
      ++set_.stats.unknown;
      return;
    case LineKind::kMalformed:
      ++set_.stats.malformed;
      return;
    case LineKind::kVersion: {
      bool seen = false;
      for (const auto& v : set_.versions) seen = seen || v == p.version;
      if (!seen && set_.versions.size() < 64) set_.versions.push_back(p.version);
      break;
    }
    case LineKind::kSetting: {
      const bool known = set_.settings.count(p.setting_name) > 0;
      if (!known && set_.settings.size() >= 128) break;
      std::vector<std::string>& values = set_.settings[p.setting_name];
      if (values.size() < 8 &&
          std::find(values.begin(), values.end(), p.setting_value) == values.end())
        values.push_back(p.setting_value);
      break;
    }
    case LineKind::kDriverVersion: {
      auto& d = set_.driver_versions;
      if (d.size() < 16 && std::find(d.begin(), d.end(), p.driver_version) == d.end())
        d.push_back(p.driver_version);
      break;
    }
    case LineKind::kComm:
      apply_comm(file, p);
      break;
    case LineKind::kRingOrder:
      set_.ranks[record_for(file, p, true)].rings.push_back(std::move(p.ring));
      break;
    case LineKind::kRingNeighbors:
      set_.ranks[record_for(file, p, true)].ring_neighbors.push_back(p.neighbors);
      break;
    case LineKind::kTrees: {
      RankView& r = set_.ranks[record_for(file, p, true)];
      r.tree_channels = p.tree_channels;
      r.trees_line = std::string(p.message);
    } break;
    case LineKind::kTransport:
      set_.ranks[record_for(file, p, false)].transports.push_back(std::move(p.transport));
      break;
    case LineKind::kPattern: {
      std::size_t r = record_for(file, p, true);
      set_.ranks[r].graphs.push_back(std::move(p.pattern));
      last_graph_[t] = {r, set_.ranks[r].graphs.size() - 1};
      break;
    }
    case LineKind::kGraphChannel: {
      auto it = last_graph_.find(t);
      if (it == last_graph_.end() || it->second.first >= set_.ranks.size()) {
        ++set_.stats.unknown;  // a channel list with no Pattern line before it
        return;
      }
      auto& g = set_.ranks[it->second.first].graphs[it->second.second];
      if (g.channels.size() < 4096) g.channels.push_back(std::move(p.graph_channel));
      break;
    }
    case LineKind::kCollChannels: {
      RankView& r = set_.ranks[record_for(file, p, true)];
      r.coll_channels = p.coll_channels;
      r.coll_line = std::string(p.message);
    } break;
    case LineKind::kNics: {
      bool seen = false;
      for (const auto& n : set_.nics) seen = seen || (n.host == p.nics.host && n.net == p.nics.net);
      if (!seen) set_.nics.push_back(std::move(p.nics));
      break;
    }
    case LineKind::kNvls:
      set_.ranks[record_for(file, p, false)].nvls = true;
      break;
    case LineKind::kWarn:
      return;  // taken above
  }
  ++set_.stats.used;
}

LogSet LogParser::take() {
  open_.clear();
  open_refs_.clear();
  threads_of_.clear();
  open_comm_.clear();
  last_on_dev_.clear();
  ordinals_.clear();
  last_graph_.clear();
  LogSet out = std::move(set_);
  set_ = LogSet{};
  return out;
}

std::vector<CommGroup> group_comms(const LogSet& set) {
  std::vector<CommGroup> groups;
  std::map<std::string, std::size_t> by_key;
  // Without a commId, comms are told apart by size and creation order; two processes claiming
  // one rank under such a key are different comms (one per node, e.g. tensor-parallel groups,
  // or nodes that never joined), so the key then takes the host too.
  std::map<std::pair<std::string, int>, std::string> claimed;  // (key, rank) -> host:pid
  for (std::size_t i = 0; i < set.ranks.size(); ++i) {
    const RankView& r = set.ranks[i];
    std::string key = r.comm_id;
    if (r.rank < 0 || r.nranks <= 0) {
      // No comm line (cut-out excerpts, 2.4 logs): its transports still tell something.
      if (r.transports.empty()) continue;
      key = "(no comm line)";
    } else if (key.empty()) {
      key = "nranks " + std::to_string(r.nranks) +
            (r.nnodes > 0 ? " nnodes " + std::to_string(r.nnodes) : "") + " #" +
            std::to_string(r.ordinal);
      std::string who = r.host + ":" + std::to_string(r.pid);
      auto [it, fresh] = claimed.emplace(std::make_pair(key, r.rank), who);
      if (!fresh && it->second != who && it->second.substr(0, r.host.size() + 1) != r.host + ":")
        key += " @" + r.host;
    }
    auto [it, fresh] = by_key.emplace(key, groups.size());
    if (fresh) groups.push_back(CommGroup{key, r.rank < 0 ? -1 : r.nranks, {}});
    groups[it->second].members.push_back(i);
  }
  return groups;
}

}  // namespace ncclwatch::topology

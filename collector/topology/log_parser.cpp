#include "topology/log_parser.h"

#include <fstream>
#include <sstream>

#include "topology/dump_reader.h"
#include "topology/text_scan.h"

namespace ncclwatch::topology {

void LogParser::add_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    set_.problems.push_back(path + ": cannot be read");
    return;
  }
  constexpr std::size_t kMax = std::size_t{1} << 30;
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMax) {
      set_.problems.push_back(path + ": larger than 1 GiB, read the first 1 GiB");
      break;
    }
  }
  add_text(path, text);
}

void LogParser::add_text(const std::string& file, std::string_view text) {
  ++set_.stats.files;
  std::string_view head = scan::trim(text.substr(0, 256));
  if (!head.empty() && head.front() == '<') {
    if (!read_dump(file, text, set_))
      set_.problems.push_back(file + ": XML, but not an NCCL topology or graph dump");
    return;
  }
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    add_line(file, line);
  }
  // Inits still open at the end of a file were cut short (crash, hang, truncated copy).
  for (auto it = open_.begin(); it != open_.end();)
    it = std::get<0>(it->first) == file ? open_.erase(it) : std::next(it);
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
  open_[t] = r;
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
    for (auto& [thread, rec] : open_) {
      const RankView& r = set_.ranks[rec];
      if (std::get<0>(thread) == file && r.host == p.host && r.pid == p.pid &&
          r.comm_ptr == f.ptr) {
        index = rec;
        break;
      }
    }
  }
  if (index == SIZE_MAX) index = new_record(file, p);
  RankView& r = set_.ranks[index];
  if (r.comm_ptr.empty()) r.comm_ptr = f.ptr;
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
    for (auto it = open_.begin(); it != open_.end();)
      it = it->second == index ? open_.erase(it) : std::next(it);
  } else {
    open_[t] = index;
  }
}

void LogParser::add_line(const std::string& file, std::string_view line) {
  ++set_.stats.lines;
  ParsedLine p = parse_log_line(line);
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
  }
  ++set_.stats.used;
}

LogSet LogParser::take() {
  open_.clear();
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

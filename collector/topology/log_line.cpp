// Line forms, by NCCL version (from NCCL's sources and real logs; see docs/topology.md):
//   prefix        "host:pid:tid [dev] NCCL INFO " (all versions)
//   warning       "host:pid:tid [dev] file.cc:line NCCL WARN " (after an empty line); 2.26+ with
//                 "[%F %T] " in front by default (NCCL_DEBUG_TIMESTAMP_LEVELS/FORMAT)
//   comm          2.18+: "comm 0x.. rank r nRanks n nNodes m localRanks l localRank k MNNVL 0"
//                 2.5-2.11: "comm 0x.. rank r nranks n cudaDev d busId b - Init COMPLETE"
//                 2.12+: "... busId b commId 0x.. - Init COMPLETE" (2.14+ also "- Init START",
//                 2.23+ "ncclCommInitRankConfig comm 0x.. rank .. nranks ..")
//   ring order    "Channel 00/08 :    0   1   2 ..." (rank 0 only; long lines cut with "...")
//   ring nbrs     2.19+: "Ring 00 : 2 -> 0 -> 1"
//   trees         2.7+: "Trees [0] d0/d1/d2->r->up [1] ..."; 2.5/2.6: "[0]
//   d/d/d->r->up|up->r->d/d/d";
//                 2.4: "Trees [0] up->r->d0/d1/d2"
//   transport     2.12+: "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA"
//                 2.7-2.11: "Channel 00 : 0[1b000] -> 1[1c000] via P2P/IPC"
//                 2.5/2.6: "Ring 00 : 12[41000] -> 11[2d000] via P2P/IPC"; 2.4: "Ring 00 : 3 -> 4
//                 [send] via NET/Socket/0"
//   pattern       "Pattern 4, crossNic 0, nChannels 8, bw|speed 40.0/40.0, type NVL/PIX,
//   sameChannels 1"
//                 followed by " 0 : NET/0 GPU/0 .. NET/0" per channel
#include "topology/log_line.h"

#include <cctype>

#include "topology/text_scan.h"

namespace ncclwatch::topology {

using namespace scan;

const char* via_name(Via v) {
  switch (v) {
    case Via::kP2P:
      return "P2P";
    case Via::kShm:
      return "SHM";
    case Via::kNet:
      return "NET";
    case Via::kNvls:
      return "NVLS";
    case Via::kCollNet:
      return "COLLNET";
    default:
      return "unknown";
  }
}

namespace {

// head is everything before "NCCL INFO".
LinePrefix parse_prefix(std::string_view head) {
  LinePrefix p;
  head = trim(head);
  if (head.empty() || head.back() != ']') return p;
  std::size_t lb = head.rfind('[');
  if (lb == std::string_view::npos) return p;
  if (!whole_int(head.substr(lb + 1, head.size() - lb - 2), p.dev)) return p;
  std::string_view id = trim(head.substr(0, lb));
  std::size_t sp = id.find_last_of(" \t");
  if (sp != std::string_view::npos) id = id.substr(sp + 1);
  // host:pid:tid, host being the last ':'-field before pid (launchers prefix "[1,0]<stdout>:").
  std::size_t c2 = id.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return p;
  std::size_t c1 = id.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos) return p;
  std::string_view tid = id.substr(c2 + 1), pid = id.substr(c1 + 1, c2 - c1 - 1);
  std::string_view host = id.substr(0, c1);
  std::size_t c0 = host.rfind(':');
  if (c0 != std::string_view::npos) host = host.substr(c0 + 1);
  if (host.empty() || !integer(tid, p.tid) || !tid.empty() || !integer(pid, p.pid) || !pid.empty())
    return p;
  p.host = std::string(host);
  p.ok = true;
  return p;
}

bool parse_comm(std::string_view msg, CommFields& f) {
  auto w = words(msg);
  bool have_rank = false, have_n = false;
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    std::string_view k = w[i], v = w[i + 1];
    if (k == "comm" && v.substr(0, 2) == "0x")
      f.ptr = std::string(v);
    else if (k == "rank")
      have_rank = whole_int(v, f.rank);
    else if (k == "nranks" || k == "nRanks")
      have_n = whole_int(v, f.nranks);
    else if (k == "nNodes")
      whole_int(v, f.nnodes);
    else if (k == "localRanks")
      whole_int(v, f.local_ranks);
    else if (k == "localRank")
      whole_int(v, f.local_rank);
    else if (k == "cudaDev")
      whole_int(v, f.cuda_dev);
    else if (k == "busId")
      f.bus_id = std::string(v);
    else if (k == "commId" && v.substr(0, 2) == "0x")
      f.comm_id = std::string(v);
    else if (k == "Init" && v == "COMPLETE")
      f.complete = true;
  }
  return have_rank && have_n && !f.ptr.empty() && f.rank >= 0 && f.nranks > 0 && f.rank < f.nranks;
}

// "12[41000]", "0[0]" or "35": the rank before any bracket.
bool parse_peer(std::string_view word, int& rank) {
  std::size_t b = word.find('[');
  if (b != std::string_view::npos) {
    if (word.back() != ']') return false;
    word = word.substr(0, b);
  }
  return whole_int(word, rank) && rank >= 0;
}

bool parse_transport(std::string_view rest, Transport& t) {
  std::size_t via = rest.find(" via ");
  if (via == std::string_view::npos) return false;
  t.detail = std::string(trim(rest.substr(via + 5)));
  auto w = words(rest.substr(0, via));
  if (w.size() < 3 || w[1] != "->" || !parse_peer(w[0], t.from) || !parse_peer(w[2], t.to))
    return false;
  if (w.size() >= 4) {
    if (w[3] == "[send]")
      t.direction = 1;
    else if (w[3] == "[receive]")
      t.direction = 2;
    else
      return false;
  }
  if (w.size() > 4 || t.detail.empty()) return false;
  std::string_view d = t.detail;
  if (eat(d, "P2P"))
    t.via = Via::kP2P;
  else if (eat(d, "SHM"))
    t.via = Via::kShm;
  else if (eat(d, "NVLS"))
    t.via = Via::kNvls;
  else if (eat(d, "COLLNET"))
    t.via = Via::kCollNet;
  else if (eat(d, "NET/")) {
    t.via = Via::kNet;
    std::size_t slash = d.find('/');
    t.net = std::string(d.substr(0, slash));
    if (slash != std::string_view::npos) {
      std::string_view dev = d.substr(slash + 1);
      int n = -1;
      if (small_int(dev, n) && n >= 0) t.net_dev = n;
    }
  }
  return true;
}

// "Channel 00/08 :    0   1   2 ..." after the ':'.
bool parse_ring_order(std::string_view rest, RingOrder& r) {
  for (std::string_view w : words(rest)) {
    int v = -1;
    if (w.find("...") != std::string_view::npos) {  // NCCL cut the line (a number may be cut too)
      r.truncated = true;
      break;
    }
    if (!whole_int(w, v) || v < 0) return false;
    r.ranks.push_back(v);
  }
  return !r.ranks.empty();
}

bool parse_neighbors(std::string_view rest, RingNeighbors& n) {
  auto w = words(rest);
  return w.size() == 5 && w[1] == "->" && w[3] == "->" && whole_int(w[0], n.prev) &&
         whole_int(w[2], n.self) && whole_int(w[4], n.next);
}

// "[0] 1/-1/-1->0->-1 [1] ..." (also the 2.5 "a|b" and 2.4 "up->r->d/d/d" forms).
bool parse_trees(std::string_view rest, int& channels) {
  channels = 0;
  auto w = words(rest);
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i].size() < 3 || w[i].front() != '[' || w[i].back() != ']') return false;
    int c = -1;
    if (!whole_int(w[i].substr(1, w[i].size() - 2), c) || c < 0) return false;
    if (i + 1 >= w.size() || w[i + 1].find("->") == std::string_view::npos) return false;
    ++i;
    ++channels;
  }
  return channels > 0;
}

bool parse_pattern(std::string_view msg, GraphSearch& g) {
  // Comma-separated "key value" pairs.
  while (!msg.empty()) {
    std::size_t comma = msg.find(',');
    std::string_view item = trim(msg.substr(0, comma));
    msg = comma == std::string_view::npos ? std::string_view{} : msg.substr(comma + 1);
    std::size_t sp = item.find(' ');
    if (sp == std::string_view::npos) continue;
    std::string_view k = item.substr(0, sp), v = trim(item.substr(sp + 1));
    if (k == "Pattern")
      whole_int(v, g.pattern);
    else if (k == "crossNic")
      whole_int(v, g.cross_nic);
    else if (k == "nChannels")
      whole_int(v, g.nchannels);
    else if (k == "bw" || k == "speed") {
      std::string_view t = v;
      if (decimal(t, g.bw_intra) && eat(t, "/")) decimal(t, g.bw_inter);
    } else if (k == "type") {
      std::size_t slash = v.find('/');
      g.type_intra = std::string(v.substr(0, slash));
      if (slash != std::string_view::npos) g.type_inter = std::string(v.substr(slash + 1));
    }
  }
  return g.pattern >= 0 && g.nchannels >= 0;
}

// " 0 : NET/0 GPU/0 GPU/1 NET/0" (or 2.4's " 0 :    0    1").
bool parse_graph_channel(std::string_view msg, std::vector<std::string>& tokens) {
  auto w = words(msg);
  int c = -1;
  if (w.size() < 3 || w[1] != ":" || !whole_int(w[0], c) || c < 0) return false;
  for (std::size_t i = 2; i < w.size(); ++i) {
    int v = 0;
    if (w[i].find('/') == std::string_view::npos && !whole_int(w[i], v)) return false;
    tokens.emplace_back(w[i]);
  }
  return true;
}

// "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>": "[N]name" is a
// device, a bracket without a number is a flag ("[RO]": relaxed ordering). NCCL 2.28 on a
// machine without IB devices prints "NET/IB : Using [RO]; OOB eth0:..." (no device): a valid
// line with nothing to learn, told apart from a damaged one by `nothing`.
bool parse_nics(std::string_view msg, HostNics& n, bool& nothing) {
  nothing = false;
  std::string_view t = msg;
  if (!eat(t, "NET/")) return false;
  std::size_t colon = t.find(" : Using ");
  if (colon == std::string_view::npos) return false;
  n.net = std::string(trim(t.substr(0, colon)));
  t = t.substr(colon + 9);
  std::size_t semi = t.find(';');
  if (semi != std::string_view::npos) t = t.substr(0, semi);
  bool flags = false;
  for (std::string_view w : words(t)) {
    if (w.front() != '[') continue;
    std::size_t rb = w.find(']');
    if (rb == std::string_view::npos) return false;
    int index = 0;
    if (!whole_int(w.substr(1, rb - 1), index)) {
      flags = flags || rb + 1 == w.size();  // "[RO]"
      continue;
    }
    if (rb + 1 >= w.size()) return false;  // "[0]" without a name
    n.devices.emplace_back(w.substr(rb + 1));
  }
  nothing = n.devices.empty() && flags;
  return !n.net.empty() && !n.devices.empty();
}

// "[time] host:pid:tid [dev] file.cc:line NCCL WARN message": the location is the word after the
// device's ']' (absent in some forms); the rest as an INFO line's prefix.
ParsedLine parse_warn_line(std::string_view line) {
  ParsedLine p;
  const std::size_t at = line.find("NCCL WARN");
  if (at == std::string_view::npos) return p;
  p.kind = LineKind::kWarn;
  p.message = trim(line.substr(at + 9));
  std::string_view head = trim(line.substr(0, at));
  const std::size_t bracket = head.rfind(']');
  if (bracket != std::string_view::npos) {
    p.site = trim(head.substr(bracket + 1));
    if (p.site.find_first_of(" \t") != std::string_view::npos) p.site = {};  // not one word
    head = head.substr(0, bracket + 1);
  }
  p.prefix = parse_prefix(head);
  if (!p.prefix.ok) p.kind = LineKind::kNotNccl;  // someone quoting NCCL, not NCCL's own line
  return p;
}

// "NCCL_SOCKET_IFNAME set by environment to eth0", "NCCL_NTHREADS set by environment to 512."
bool parse_setting(std::string_view msg, std::string& name, std::string& value) {
  constexpr std::string_view kSetBy = " set by environment to ";
  const std::size_t at = msg.find(kSetBy);
  if (at == std::string_view::npos || at == 0 || at > 64) return false;
  const std::string_view n = msg.substr(0, at);
  for (char c : n) {
    if (!(std::isupper(static_cast<unsigned char>(c)) || is_digit(c) || c == '_')) return false;
  }
  std::string_view v = trim(msg.substr(at + kSetBy.size()));
  if (!v.empty() && v.back() == '.') v.remove_suffix(1);
  name = std::string(n);
  value = std::string(v.substr(0, 200));
  return true;
}

}  // namespace

ParsedLine parse_log_line(std::string_view line) {
  ParsedLine p;
  std::size_t at = line.find("NCCL INFO");
  if (at == std::string_view::npos) {
    if (line.find("NCCL WARN") != std::string_view::npos) return parse_warn_line(line);
    // Rank 0 prints its version to stdout without the prefix in some versions.
    std::size_t v = line.find("NCCL version ");
    if (v != std::string_view::npos) {
      auto w = words(line.substr(v + 13));
      if (!w.empty()) {
        p.kind = LineKind::kVersion;
        p.version = std::string(w.front());
      }
    }
    return p;
  }
  p.prefix = parse_prefix(line.substr(0, at));
  std::string_view msg = trim(line.substr(at + 9));
  p.message = msg;
  p.kind = LineKind::kUnknown;
  if (!p.prefix.ok) return p;  // no thread to tie it to: counted as unknown

  auto set = [&](bool ok, LineKind k) { p.kind = ok ? k : LineKind::kMalformed; };
  std::string_view t = msg;
  if (eat(t, "NCCL version ")) {
    auto w = words(t);
    set(!w.empty(), LineKind::kVersion);
    if (!w.empty()) p.version = std::string(w.front());
  } else if (msg.substr(0, 5) == "NCCL_" &&
             msg.find(" set by environment to ") != std::string_view::npos) {
    set(parse_setting(msg, p.setting_name, p.setting_value), LineKind::kSetting);
  } else if (eat(t, "cudaDriverVersion ")) {
    set(small_int(t, p.driver_version) && p.driver_version > 0, LineKind::kDriverVersion);
  } else if (msg.find("NVLS comm 0x") != std::string_view::npos ||
             msg.find("Connected NVLS") != std::string_view::npos) {
    p.kind = LineKind::kNvls;
  } else if (msg.find("comm 0x") != std::string_view::npos &&
             (msg.find(" nranks") != std::string_view::npos ||
              msg.find(" nRanks") != std::string_view::npos)) {
    if (msg.find("Destroy") != std::string_view::npos ||
        msg.find("Abort") != std::string_view::npos ||
        msg.find("Finalize") != std::string_view::npos)
      p.kind = LineKind::kKnown;
    else
      set(parse_comm(msg, p.comm), LineKind::kComm);
  } else if (eat(t, "Channel ") || eat(t, "Ring ")) {
    int ch = -1, sub = -1;
    if (!small_int(t, ch) || ch < 0) return p;  // "Channel" in some other sentence
    skip_spaces(t);
    if ((eat(t, "/") && !small_int(t, sub)) || (skip_spaces(t), !eat(t, ":"))) {
      p.kind = LineKind::kMalformed;
      return p;
    }
    if (t.find(" via ") != std::string_view::npos || t.find("via") != std::string_view::npos) {
      p.transport.channel = ch;
      p.transport.evidence = std::string(msg);
      set(parse_transport(t, p.transport), LineKind::kTransport);
    } else if (t.find("->") != std::string_view::npos) {
      p.neighbors.channel = ch;
      set(parse_neighbors(t, p.neighbors), LineKind::kRingNeighbors);
    } else {
      p.ring.channel = ch;
      p.ring.nchannels = sub;
      p.ring.evidence = std::string(msg);
      set(parse_ring_order(t, p.ring), LineKind::kRingOrder);
    }
  } else if (eat(t, "Trees")) {
    set(parse_trees(t, p.tree_channels), LineKind::kTrees);
  } else if (msg.substr(0, 8) == "Pattern ") {
    p.pattern.evidence = std::string(msg);
    set(parse_pattern(msg, p.pattern), LineKind::kPattern);
  } else if (!msg.empty() && is_digit(msg.front()) &&
             msg.find(" coll channels") != std::string_view::npos) {
    set(small_int(t, p.coll_channels) && p.coll_channels >= 0, LineKind::kCollChannels);
  } else if (!msg.empty() && is_digit(msg.front()) && msg.find(" : ") != std::string_view::npos) {
    set(parse_graph_channel(msg, p.graph_channel), LineKind::kGraphChannel);
  } else if (msg.substr(0, 4) == "NET/" && msg.find(" : Using ") != std::string_view::npos) {
    p.nics.host = p.prefix.host;
    p.nics.evidence = std::string(msg);
    bool nothing = false;
    const bool ok = parse_nics(msg, p.nics, nothing);
    if (nothing)
      p.kind = LineKind::kKnown;
    else
      set(ok, LineKind::kNics);
  } else if (msg.substr(0, 4) == "NET/" || msg.substr(0, 10) == "Bootstrap " ||
             msg.substr(0, 10) == "Connected " || msg.substr(0, 5) == "Tree " ||
             msg.substr(0, 14) == "Using network ") {
    p.kind = LineKind::kKnown;
  }
  return p;
}

}  // namespace ncclwatch::topology

#include "live/status_reader.h"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "live/own_file.h"
#include "ncclwatch/in_flight_slot.h"
#include "trace/host_clock.h"
#include "trace/record_check.h"
#include "trace/salvage.h"
#include "trace/segment_view.h"
#include "trace/seq_unwrapper.h"
#include "trace/trace_file_reader.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::live {
namespace {

using format::Func;
using format::RecordKind;

bool has_seq(Func f) {
  return format::is_collective(f) || format::is_p2p(f);
}

// What a stream of one process's records says about its calls: a trace file read so far, or the
// records a dead process's segment still holds.
struct CallProgress {
  int32_t rank = -1;
  trace::SeqUnwrapper seqs;
  std::map<uint64_t, CommProgress> comms;
  // In-flight records not yet superseded by their return record, by (entry time, tid).
  std::map<std::pair<int64_t, uint32_t>, OpenCall> open;
  std::set<int64_t> returned_enters;  // recent returns, to drop in-flight records seen late
  Func last_func = Func::kUnknown;
  int64_t last_return_ns = 0;
  int64_t alive_until_ns = 0;

  void returned(int64_t enter, int64_t exit, Func func) {
    if (!open.empty()) {
      for (auto it = open.begin(); it != open.end();) {
        it = it->first.first == enter ? open.erase(it) : std::next(it);
      }
    }
    returned_enters.insert(enter);
    if (returned_enters.size() > 4096) returned_enters.erase(returned_enters.begin());
    if (exit >= last_return_ns) {
      last_return_ns = exit;
      last_func = func;
    }
    alive_until_ns = std::max(alive_until_ns, exit);
  }

  void entered(uint64_t comm, Func func, int64_t seq) {
    CommProgress& p = comms[comm];
    if (seq > p.entered) {
      p.entered = seq;
      p.entered_func = func;
    }
  }

  void add_call(const format::CallRecord& c) {
    const auto func = static_cast<Func>(c.prefix.u8a);
    if (format::is_collective(func)) {
      const auto seq = static_cast<int64_t>(
          seqs.unwrap(c.comm_id, trace::SeqUnwrapper::Lane::kCollective, -1, c.seq));
      entered(c.comm_id, func, seq);
      CommProgress& p = comms[c.comm_id];
      p.returned = std::max(p.returned, seq);
    }
    returned(c.t_enter_ns, c.t_exit_ns, func);
  }

  void add_in_flight(const format::InFlightRecord& f) {
    const auto& e = f.entry;
    alive_until_ns = std::max(alive_until_ns, f.t_seen_ns);
    if (returned_enters.contains(e.t_enter_ns)) return;
    OpenCall oc;
    oc.func = static_cast<Func>(e.func);
    oc.comm_id = e.comm_id;
    oc.enter_ns = e.t_enter_ns;
    oc.age_ns = f.t_seen_ns - e.t_enter_ns;
    oc.tid = f.prefix.tid;
    if (format::is_collective(oc.func)) {
      oc.seq = seqs.unwrap(e.comm_id, trace::SeqUnwrapper::Lane::kCollective, -1, e.seq);
      oc.has_seq = true;
      entered(e.comm_id, oc.func, static_cast<int64_t>(oc.seq));
    } else if (format::is_p2p(oc.func)) {
      oc.seq = e.seq;
      oc.has_seq = true;
    }
    open[{e.t_enter_ns, f.prefix.tid}] = oc;
  }

  void add(const format::Record& r) {
    if (trace::record_problem(r) != nullptr) return;
    switch (r.prefix.kind) {
      case RecordKind::kCall:
        add_call(r.call);
        break;
      case RecordKind::kComm: {
        const auto& c = r.comm;
        if (c.prefix.u8b == 0 && c.comm_id != 0) {
          CommProgress& p = comms[c.comm_id];
          p.comm_rank = c.rank;
          p.nranks = c.nranks;
        }
        returned(c.t_enter_ns, c.t_exit_ns, static_cast<Func>(c.prefix.u8a));
        break;
      }
      case RecordKind::kGroup:
        returned(r.group.t_enter_ns, r.group.t_exit_ns, static_cast<Func>(r.prefix.u8a));
        break;
      case RecordKind::kCommEnd:
        returned(r.comm_end.t_enter_ns, r.comm_end.t_exit_ns, static_cast<Func>(r.prefix.u8a));
        break;
      case RecordKind::kUniqueId:
        returned(r.unique_id.t_enter_ns, r.unique_id.t_exit_ns, Func::kGetUniqueId);
        break;
      case RecordKind::kIdentity:
        if (r.identity.rank >= 0) rank = r.identity.rank;
        break;
      case RecordKind::kClock:
        alive_until_ns = std::max(alive_until_ns, r.clock.monotonic_ns);
        break;
      case RecordKind::kInFlight:
        add_in_flight(r.in_flight);
        break;
      default:
        break;
    }
  }
};

// One segment of this node as read now: identity, liveness, and the calls in flight right now.
struct SegmentInfo {
  format::ProcessInfo process{};
  bool live = false;
  std::vector<format::InFlightSlot> active;
  std::vector<format::Record> unwritten;  // dead owner: ring records its trace never got
  std::string trace_path;
  model::Losses losses;
};

SegmentInfo segment_info(const trace::SegmentView& view) {
  SegmentInfo s;
  s.process = view.header().process;
  s.live = view.header().state == format::kSegmentStateLive &&
           trace::process_alive(view.header().process.pid);
  s.active = view.in_flight(/*active_only=*/true);
  s.trace_path = view.trace_path();
  s.losses = model::Losses::of(view.header());
  if (!s.live) {
    // Nobody writes any more: what the drain thread never wrote is still in the ring (read like
    // salvage does, without touching anything).
    const uint64_t w = view.write_pos(), cap = view.capacity();
    uint64_t pos = std::max(view.read_pos(), w > cap ? w - cap : 0);
    format::Record rec;
    for (; pos < w; ++pos)
      if (view.read(pos, rec)) s.unwritten.push_back(rec);
  }
  return s;
}

std::vector<SegmentInfo> read_segments(const std::string& job, std::vector<std::string>& notes) {
  std::vector<SegmentInfo> segments;
  for (const auto& name : trace::list_segments(job)) {
    trace::SegmentView view;
    if (!open_own_segment(view, trace::kShmDirectory, name, job, notes)) continue;
    segments.push_back(segment_info(view));
  }
  return segments;
}

// The directory's trace files, else those our own segments name (checked like any input).
std::set<std::string> trace_paths(const StatusOptions& options,
                                  const std::vector<SegmentInfo>& segments,
                                  std::vector<std::string>& notes) {
  std::set<std::string> paths;
  if (!options.dir.empty()) {
    add_trace_files(options.dir, paths, notes);
  } else {
    for (const auto& s : segments)
      if (!s.trace_path.empty()) paths.insert(s.trace_path);
  }
  return paths;
}

using RanksByProcess = std::map<std::pair<std::string, int64_t>, RankStatus>;  // (host, pid)

RankStatus& rank_of(RanksByProcess& ranks, const format::ProcessInfo& p) {
  RankStatus& rs = ranks[{trace::bounded_string(p.host, sizeof p.host), p.pid}];
  rs.host = trace::bounded_string(p.host, sizeof p.host);
  rs.pid = p.pid;
  return rs;
}

// What a trace file has said so far about its process.
void take_trace(RankStatus& rs, const format::TraceHeader& header, const CallProgress& progress) {
  rs.rank = progress.rank;
  rs.from_trace = true;
  rs.trace_closed =
      header.state == format::kTraceStateClosed || header.state == format::kTraceStateSalvaged;
  rs.comms = progress.comms;
  for (const auto& [key, oc] : progress.open) rs.open_calls.push_back(oc);
  rs.last_func = progress.last_func;
  rs.last_return_ns = progress.last_return_ns;
  rs.losses = model::Losses::of(header);
  if (progress.open.empty() && progress.last_return_ns > 0 &&
      progress.alive_until_ns >= progress.last_return_ns)
    rs.idle_ns = progress.alive_until_ns - progress.last_return_ns;
}

// A dead process's segment: its last records and the calls it died in.
void take_dead_segment(RankStatus& rs, const SegmentInfo& s) {
  CallProgress tail;
  for (const auto& rec : s.unwritten) tail.add(rec);
  for (const auto& slot : s.active)
    tail.add(format::in_flight_record(slot, tail.alive_until_ns, format::InFlightSource::kSalvage));
  for (const auto& [id, p] : tail.comms) {
    CommProgress& q = rs.comms[id];
    if (p.entered > q.entered) {
      q.entered = p.entered;
      q.entered_func = p.entered_func;
    }
    q.returned = std::max(q.returned, p.returned);
    if (p.nranks > 0) {
      q.nranks = p.nranks;
      q.comm_rank = p.comm_rank;
    }
  }
  for (const auto& [key, oc] : tail.open) rs.open_calls.push_back(oc);
  if (tail.last_return_ns > rs.last_return_ns) {
    rs.last_return_ns = tail.last_return_ns;
    rs.last_func = tail.last_func;
  }
  if (rs.rank < 0) rs.rank = tail.rank;
}

bool is_comm_init(Func f) {
  return f == Func::kCommInitRank || f == Func::kCommInitRankConfig ||
         f == Func::kCommInitRankScalable;
}

// A live process's in-flight slot: the call it is inside right now.
OpenCall open_call_of(RankStatus& rs, const format::InFlightSlot& slot, int64_t now_ns) {
  OpenCall oc;
  oc.func = static_cast<Func>(slot.entry.func);
  oc.comm_id = slot.entry.comm_id;
  oc.enter_ns = slot.entry.t_enter_ns;
  oc.age_ns = now_ns - slot.entry.t_enter_ns;
  oc.tid = slot.owner_tid;
  if (has_seq(oc.func)) {
    // The slot holds the low 32 bits; the trace's progress on the comm gives the rest.
    auto it = rs.comms.find(oc.comm_id);
    const uint64_t base = it != rs.comms.end() && it->second.entered > 0
                              ? static_cast<uint64_t>(it->second.entered)
                              : 0;
    uint64_t seq = (base & ~uint64_t{0xffffffff}) | slot.entry.seq;
    if (seq + 0x80000000ull < base) seq += uint64_t{1} << 32;
    oc.seq = seq;
    oc.has_seq = true;
    if (format::is_collective(oc.func)) {
      CommProgress& p = rs.comms[oc.comm_id];
      if (static_cast<int64_t>(seq) > p.entered) {
        p.entered = static_cast<int64_t>(seq);
        p.entered_func = oc.func;
      }
    }
  } else if (oc.comm_id != 0 && slot.entry.count > 0 && is_comm_init(oc.func)) {
    CommProgress& p = rs.comms[oc.comm_id];
    p.nranks = static_cast<int32_t>(slot.entry.count);
    p.comm_rank = slot.entry.peer;
  }
  return oc;
}

// This node's segment of the process: identity, liveness, and what it is inside.
void take_segment(RankStatus& rs, const SegmentInfo& s, int64_t now_ns) {
  if (s.process.rank >= 0) rs.rank = s.process.rank;
  rs.from_segment = true;
  rs.live = s.live;
  rs.trace_path = s.trace_path;
  rs.losses = s.losses;  // the owner's running counts: never behind the file's header
  if (!s.live) {
    take_dead_segment(rs, s);
    return;
  }
  // The slots are the truth about what a live process is inside right now.
  rs.open_calls.clear();
  for (const auto& slot : s.active) rs.open_calls.push_back(open_call_of(rs, slot, now_ns));
  if (!rs.open_calls.empty()) rs.idle_ns = -1;
}

// The ranks by rank (unknown last), each call open once, oldest first.
std::vector<RankStatus> sorted_ranks(RanksByProcess& by_process) {
  std::vector<RankStatus> ranks;
  for (auto& [key, rs] : by_process) {
    auto& oc = rs.open_calls;
    std::sort(oc.begin(), oc.end(), [](const OpenCall& a, const OpenCall& b) {
      return std::tie(a.enter_ns, a.tid, b.age_ns) < std::tie(b.enter_ns, b.tid, a.age_ns);
    });
    // One call seen twice (trace record and slot): keep the longest age.
    oc.erase(std::unique(oc.begin(), oc.end(),
                         [](const OpenCall& a, const OpenCall& b) {
                           return a.enter_ns == b.enter_ns && a.tid == b.tid;
                         }),
             oc.end());
    for (auto& c : oc) c.age_ns = std::max<int64_t>(c.age_ns, 0);
    ranks.push_back(std::move(rs));
  }
  std::stable_sort(ranks.begin(), ranks.end(), [](const RankStatus& a, const RankStatus& b) {
    return static_cast<uint32_t>(a.rank) < static_cast<uint32_t>(b.rank);  // unknown (-1) last
  });
  return ranks;
}

// Per comm: who entered how far, who waits in the furthest call, who is behind.
std::vector<CommStatus> comm_statuses(const std::vector<RankStatus>& ranks) {
  std::map<uint64_t, CommStatus> comms;
  for (const auto& rs : ranks) {
    for (const auto& [id, p] : rs.comms) {
      CommStatus& c = comms[id];
      c.id = id;
      c.nranks = std::max(c.nranks, p.nranks);
      c.members.push_back({rs.rank, p.entered, p.returned, 0});
      if (p.entered > c.max_entered) {
        c.max_entered = p.entered;
        c.max_func = p.entered_func;
      }
    }
    for (const auto& oc : rs.open_calls) {
      if (oc.has_seq || oc.comm_id == 0) continue;
      if (is_comm_init(oc.func)) comms[oc.comm_id].in_init.push_back(rs.rank);
    }
  }
  std::vector<CommStatus> out;
  for (auto& [id, c] : comms) {
    c.id = id;
    for (auto& m : c.members) {
      m.behind = c.max_entered - m.entered;
      if (m.behind > 0) c.behind.push_back(m.rank);
    }
    for (const auto& rs : ranks) {
      for (const auto& oc : rs.open_calls) {
        if (oc.comm_id == id && oc.has_seq && format::is_collective(oc.func) &&
            static_cast<int64_t>(oc.seq) == c.max_entered)
          c.waiting.push_back(rs.rank);
      }
    }
    const auto seen = static_cast<int32_t>(c.members.size());
    c.unseen = c.nranks > seen ? c.nranks - seen : 0;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

// What one trace file has said so far (kept between reads).
struct StatusReader::FileState {
  trace::TraceFileReader reader{4096};
  uint64_t position = 0;
  bool ok = false;
  std::string error;
  format::TraceHeader header{};
  CallProgress progress;

  // Reads what was appended since the last call.
  void update(const std::string& path) {
    if (!reader.open(path)) {
      ok = false;
      error = reader.error();
      return;
    }
    ok = true;
    header = reader.header();
    if (progress.rank < 0) progress.rank = header.process.rank;
    if (reader.record_count() < position) {  // rewritten from scratch: start over
      *this = FileState{};
      update(path);
      return;
    }
    reader.seek(position);
    for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next())
      for (const auto& r : chunk) progress.add(r);
    position = reader.position();
  }
};

StatusReader::StatusReader(StatusOptions options) : options_(std::move(options)) {}
StatusReader::~StatusReader() = default;

JobStatus StatusReader::read() {
  JobStatus st;
  st.job = options_.job;
  st.now_ns = trace::monotonic_ns();
  st.now_wall_ns = trace::clock_ns(CLOCK_REALTIME);
  const std::vector<SegmentInfo> segments = read_segments(options_.job, st.notes);

  RanksByProcess by_process;
  for (const auto& path : trace_paths(options_, segments, st.notes)) {
    if (!own_input(path, st.notes)) continue;
    auto& fs = files_[path];
    if (!fs) fs = std::make_unique<FileState>();
    fs->update(path);
    if (!fs->ok) {
      st.notes.push_back(fmt::format("{}: skipped: {}", path, fs->error));
      continue;
    }
    const auto& p = fs->header.process;
    if (!of_job(p, options_.job)) continue;
    take_trace(rank_of(by_process, p), fs->header, fs->progress);
    if (st.job.empty()) st.job = trace::bounded_string(p.job, sizeof p.job);
  }
  for (const auto& s : segments) take_segment(rank_of(by_process, s.process), s, st.now_ns);
  st.ranks = sorted_ranks(by_process);
  st.comms = comm_statuses(st.ranks);
  return st;
}

}  // namespace ncclwatch::live

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

}  // namespace

// What one trace file has said so far (kept between reads).
struct StatusReader::FileState {
  trace::TraceFileReader reader{4096};
  uint64_t position = 0;
  bool ok = false;
  std::string error;
  format::TraceHeader header{};
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

  void add(const format::Record& r) {
    if (trace::record_problem(r) != nullptr) return;
    switch (r.prefix.kind) {
      case RecordKind::kCall: {
        const auto& c = r.call;
        const auto func = static_cast<Func>(c.prefix.u8a);
        if (format::is_collective(func)) {
          const auto seq = static_cast<int64_t>(
              seqs.unwrap(c.comm_id, trace::SeqUnwrapper::Lane::kCollective, -1, c.seq));
          entered(c.comm_id, func, seq);
          CommProgress& p = comms[c.comm_id];
          p.returned = std::max(p.returned, seq);
        }
        returned(c.t_enter_ns, c.t_exit_ns, func);
        break;
      }
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
      case RecordKind::kInFlight: {
        const auto& e = r.in_flight.entry;
        alive_until_ns = std::max(alive_until_ns, r.in_flight.t_seen_ns);
        if (returned_enters.contains(e.t_enter_ns)) break;
        OpenCall oc;
        oc.func = static_cast<Func>(e.func);
        oc.comm_id = e.comm_id;
        oc.enter_ns = e.t_enter_ns;
        oc.age_ns = r.in_flight.t_seen_ns - e.t_enter_ns;
        oc.tid = r.prefix.tid;
        if (format::is_collective(oc.func)) {
          oc.seq = seqs.unwrap(e.comm_id, trace::SeqUnwrapper::Lane::kCollective, -1, e.seq);
          oc.has_seq = true;
          entered(e.comm_id, oc.func, static_cast<int64_t>(oc.seq));
        } else if (format::is_p2p(oc.func)) {
          oc.seq = e.seq;
          oc.has_seq = true;
        }
        open[{e.t_enter_ns, r.prefix.tid}] = oc;
        break;
      }
      default:
        break;
    }
  }

  // Reads what was appended since the last call.
  void update(const std::string& path) {
    if (!reader.open(path)) {
      ok = false;
      error = reader.error();
      return;
    }
    ok = true;
    header = reader.header();
    if (rank < 0) rank = header.process.rank;
    if (reader.record_count() < position) {  // rewritten from scratch: start over
      *this = FileState{};
      update(path);
      return;
    }
    reader.seek(position);
    for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next())
      for (const auto& r : chunk) add(r);
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

  // Segments on this node: identity, liveness, and the calls in flight right now.
  struct SegmentInfo {
    format::ProcessInfo process{};
    bool live = false;
    std::vector<format::InFlightSlot> active;
    std::vector<format::Record> unwritten;  // dead owner: ring records its trace never got
    std::string trace_path;
    model::Losses losses;
  };
  std::vector<SegmentInfo> segments;
  for (const auto& name : trace::list_segments(options_.job)) {
    trace::SegmentView view;
    if (!open_own_segment(view, trace::kShmDirectory, name, options_.job, st.notes)) continue;
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
    segments.push_back(std::move(s));
  }

  // Trace files: the directory's, and those our own segments name (checked like any input).
  std::set<std::string> paths;
  if (!options_.dir.empty()) {
    add_trace_files(options_.dir, paths, st.notes);
  } else {
    for (const auto& s : segments)
      if (!s.trace_path.empty()) paths.insert(s.trace_path);
  }

  std::map<std::pair<std::string, int64_t>, RankStatus> by_process;  // (host, pid)
  for (const auto& path : paths) {
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
    RankStatus& rs = by_process[{trace::bounded_string(p.host, sizeof p.host), p.pid}];
    rs.host = trace::bounded_string(p.host, sizeof p.host);
    rs.pid = p.pid;
    rs.rank = fs->rank;
    rs.from_trace = true;
    rs.trace_closed = fs->header.state == format::kTraceStateClosed ||
                      fs->header.state == format::kTraceStateSalvaged;
    rs.comms = fs->comms;
    for (const auto& [key, oc] : fs->open) rs.open_calls.push_back(oc);
    rs.last_func = fs->last_func;
    rs.last_return_ns = fs->last_return_ns;
    rs.losses = model::Losses::of(fs->header);
    if (fs->open.empty() && fs->last_return_ns > 0 && fs->alive_until_ns >= fs->last_return_ns)
      rs.idle_ns = fs->alive_until_ns - fs->last_return_ns;
    if (st.job.empty()) st.job = trace::bounded_string(p.job, sizeof p.job);
  }
  for (const auto& s : segments) {
    RankStatus& rs =
        by_process[{trace::bounded_string(s.process.host, sizeof s.process.host), s.process.pid}];
    rs.host = trace::bounded_string(s.process.host, sizeof s.process.host);
    rs.pid = s.process.pid;
    if (s.process.rank >= 0) rs.rank = s.process.rank;
    rs.from_segment = true;
    rs.live = s.live;
    rs.losses = s.losses;  // the owner's running counts: never behind the file's header
    if (!s.live) {
      // The dead process's last records and the calls it died in.
      FileState tail;
      for (const auto& rec : s.unwritten) tail.add(rec);
      for (const auto& slot : s.active)
        tail.add(
            format::in_flight_record(slot, tail.alive_until_ns, format::InFlightSource::kSalvage));
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
      continue;
    }
    // The slots are the truth about what a live process is inside right now.
    rs.open_calls.clear();
    for (const auto& slot : s.active) {
      OpenCall oc;
      oc.func = static_cast<Func>(slot.entry.func);
      oc.comm_id = slot.entry.comm_id;
      oc.enter_ns = slot.entry.t_enter_ns;
      oc.age_ns = st.now_ns - slot.entry.t_enter_ns;
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
      } else if (oc.comm_id != 0 && slot.entry.count > 0 &&
                 (oc.func == Func::kCommInitRank || oc.func == Func::kCommInitRankConfig ||
                  oc.func == Func::kCommInitRankScalable)) {
        CommProgress& p = rs.comms[oc.comm_id];
        p.nranks = static_cast<int32_t>(slot.entry.count);
        p.comm_rank = slot.entry.peer;
      }
      rs.open_calls.push_back(oc);
    }
    if (!rs.open_calls.empty()) rs.idle_ns = -1;
  }
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
    st.ranks.push_back(std::move(rs));
  }
  std::stable_sort(st.ranks.begin(), st.ranks.end(), [](const RankStatus& a, const RankStatus& b) {
    return static_cast<uint32_t>(a.rank) < static_cast<uint32_t>(b.rank);  // unknown (-1) last
  });

  // Per comm: who entered how far.
  std::map<uint64_t, CommStatus> comms;
  for (const auto& rs : st.ranks) {
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
      if (oc.func == Func::kCommInitRank || oc.func == Func::kCommInitRankConfig ||
          oc.func == Func::kCommInitRankScalable)
        comms[oc.comm_id].in_init.push_back(rs.rank);
    }
  }
  for (auto& [id, c] : comms) {
    c.id = id;
    for (auto& m : c.members) {
      m.behind = c.max_entered - m.entered;
      if (m.behind > 0) c.behind.push_back(m.rank);
    }
    for (const auto& rs : st.ranks) {
      for (const auto& oc : rs.open_calls) {
        if (oc.comm_id == id && oc.has_seq && format::is_collective(oc.func) &&
            static_cast<int64_t>(oc.seq) == c.max_entered)
          c.waiting.push_back(rs.rank);
      }
    }
    const auto seen = static_cast<int32_t>(c.members.size());
    c.unseen = c.nranks > seen ? c.nranks - seen : 0;
    st.comms.push_back(std::move(c));
  }
  return st;
}

}  // namespace ncclwatch::live

#include "live/node_metrics_reader.h"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "live/own_file.h"
#include "live/rank_record_consumer.h"
#include "trace/host_clock.h"
#include "trace/salvage.h"
#include "trace/segment_view.h"
#include "trace/trace_file_reader.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::live {
namespace {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

// The segment's counts run ahead of the trace header's (written at close): keep the larger, so
// the counters never go down whichever source this poll read.
void merge_lost(RankMetrics& m, const format::LossCounts& counts) {
  std::size_t i = 0;
  for (const auto& f : format::kLossFields) {
    m.lost[i] = std::max(m.lost[i], counts.*f.counter);
    ++i;
  }
}

}  // namespace

struct NodeMetricsReader::Rank {
  explicit Rank(const ExporterOptions& o, std::size_t id)
      : consumer(o.gpu_lag_ns), reader(o.chunk_records), member(id) {}
  RankRecordConsumer consumer;
  trace::TraceFileReader reader;
  std::string trace_path;
  uint64_t position = 0;
  bool trace_open = false;    // reader holds the file, positioned for this poll
  bool trace_closed = false;  // the writer finished (closed or salvaged)
  bool segment_seen = false;  // this poll
  bool trace_seen = false;    // this poll
  int64_t last_active_ns = 0;
  std::size_t member;
  std::vector<format::InFlightSlot> in_flight;
};

NodeMetricsReader::NodeMetricsReader(ExporterOptions options) : options_(std::move(options)) {
  if (options_.host.empty()) options_.host = this_host();
}
NodeMetricsReader::~NodeMetricsReader() = default;

// The rank of process `p`, tracked from now on if it is new; learns its rank numbers.
NodeMetricsReader::Rank& NodeMetricsReader::rank_for(const format::ProcessInfo& p) {
  const std::string host = trace::bounded_string(p.host, sizeof p.host);
  auto& slot = ranks_[{host, p.pid}];
  if (!slot) {
    slot = std::make_unique<Rank>(options_, next_member_++);
    RankMetrics& m = slot->consumer.metrics();
    m.job = trace::bounded_string(p.job, sizeof p.job);
    m.host = host;
    m.pid = p.pid;
  }
  RankMetrics& m = slot->consumer.metrics();
  if (m.rank < 0 && p.rank >= 0) m.rank = p.rank;
  if (m.local_rank < 0 && p.local_rank >= 0) m.local_rank = p.local_rank;
  return *slot;
}

// This node's segments: who runs here, in which mode, what they dropped, what they are inside.
void NodeMetricsReader::read_segments(NodeSnapshot& snap) {
  for (const auto& name : trace::list_segments(options_.job, options_.shm_dir)) {
    trace::SegmentView view;
    if (!open_own_segment(view, options_.shm_dir, name, options_.job, snap.notes)) continue;
    const format::SegmentHeader& h = view.header();
    Rank& r = rank_for(h.process);
    RankMetrics& m = r.consumer.metrics();
    r.segment_seen = true;
    m.live = h.state == format::kSegmentStateLive && trace::process_alive(h.process.pid);
    m.mode = h.mode;
    m.dropped = std::max(m.dropped, h.dropped);
    m.cupti_dropped = std::max(m.cupti_dropped, h.cupti_dropped);
    m.in_flight_overflow = std::max(m.in_flight_overflow, h.losses.in_flight_overflow);
    merge_lost(m, h.losses);
    r.in_flight =
        m.live ? view.in_flight(/*active_only=*/true) : std::vector<format::InFlightSlot>{};
    if (r.trace_path.empty()) r.trace_path = view.trace_path();
  }
}

// Trace files: those the segments name, and this host's in DIR (ranks that already finished).
// Returns the ranks whose trace is open and positioned where the last poll stopped.
std::vector<NodeMetricsReader::Rank*> NodeMetricsReader::open_traces(NodeSnapshot& snap) {
  std::set<std::string> paths;
  for (const auto& [key, r] : ranks_)
    if (r->segment_seen && !r->trace_path.empty()) paths.insert(r->trace_path);
  if (!options_.dir.empty()) add_trace_files(options_.dir, paths, snap.notes);
  std::vector<Rank*> active;
  for (const auto& path : paths) {
    if (!own_input(path, snap.notes)) continue;
    trace::TraceFileReader probe(1);
    if (!probe.open(path)) {
      snap.notes.push_back(fmt::format("{}: skipped: {}", path, probe.error()));
      continue;
    }
    const format::ProcessInfo& p = probe.header().process;
    if (!of_job(p, options_.job)) continue;
    const std::string host = trace::bounded_string(p.host, sizeof p.host);
    const bool ours = ranks_.contains({host, p.pid}) || host == options_.host;
    if (!ours) continue;  // another node's rank: its own exporter exports it
    Rank& r = rank_for(p);
    if (!r.trace_path.empty() && r.trace_path != path) continue;  // one trace per process
    r.trace_path = path;
    if (!r.reader.open(path)) continue;
    r.trace_seen = true;
    r.trace_open = true;
    r.trace_closed = r.reader.closed();
    RankMetrics& m = r.consumer.metrics();
    if (!r.segment_seen) {
      m.live = false;
      m.mode = r.reader.header().mode;
    }
    m.dropped = std::max(m.dropped, r.reader.header().dropped);
    m.cupti_dropped = std::max(m.cupti_dropped, r.reader.header().cupti_dropped);
    // Versions before 3 kept zeros (reserved) where the loss counts are: nothing was counted.
    if (r.reader.header().layout_version >= 3) merge_lost(m, r.reader.header().losses);
    if (r.reader.record_count() < r.position) r.position = 0;  // rewritten: cannot happen
    r.reader.seek(r.position);
    active.push_back(&r);
  }
  return active;
}

// The gauges of a rank still tracked, as of `now_ns`.
void NodeMetricsReader::update_gauges(Rank& r, int64_t now_ns) {
  RankMetrics& m = r.consumer.metrics();
  m.calls_in_flight = 0;
  m.oldest_call_in_flight_s = 0;
  for (const auto& slot : r.in_flight) {
    ++m.calls_in_flight;
    m.oldest_call_in_flight_s =
        std::max(m.oldest_call_in_flight_s, (now_ns - slot.entry.t_enter_ns) * 1e-9);
  }
  m.has_kernel_timeline = r.consumer.has_gpu_timeline();
  const int64_t launch = m.live ? r.consumer.oldest_pending_launch_ns() : 0;
  m.oldest_nccl_kernel_pending_s = launch > 0 ? std::max<double>(0, (now_ns - launch) * 1e-9) : 0;
  m.seconds_since_last_collective =
      m.last_collective_end_ns > 0 ? std::max<double>(0, (now_ns - m.last_collective_end_ns) * 1e-9)
                                   : -1;
  const GpuTimeTracker& gpu = r.consumer.gpu();
  m.gpu_busy_s = gpu.busy_s();
  m.gpu_compute_s = gpu.compute_s();
  m.gpu_exposed_comm_s = gpu.exposed_comm_s();
  m.gpu_idle_s = gpu.idle_s();
}

// Gauges, GPU sweeps, and forgetting finished ranks; the ranks still tracked go into `out`.
void NodeMetricsReader::sweep_ranks(NodeSnapshot& out) {
  for (auto it = ranks_.begin(); it != ranks_.end();) {
    Rank& r = *it->second;
    RankMetrics& m = r.consumer.metrics();
    const bool finished = !m.live && (r.trace_closed || !r.trace_seen);
    if (finished) {
      r.consumer.flush_gpu();
    } else {
      r.consumer.advance();
    }
    if (r.segment_seen || r.trace_seen) r.last_active_ns = out.now_ns;
    if (finished && !r.segment_seen &&
        out.now_ns - r.last_active_ns > static_cast<int64_t>(options_.forget_after_s * 1e9)) {
      retired_[3] += r.consumer.gpu().late_intervals();
      retired_[4] += r.consumer.unlinked();
      it = ranks_.erase(it);
      continue;
    }
    update_gauges(r, out.now_ns);
    out.late_gpu_intervals += r.consumer.gpu().late_intervals();
    out.unlinked_records += r.consumer.unlinked();
    out.ranks.push_back(m);
    ++it;
  }
}

// The node matchers' counts, with those of the jobs no longer tracked.
void NodeMetricsReader::add_matcher_counts(NodeSnapshot& out) {
  // A job none of whose ranks is tracked any more takes its matcher with it (an exporter without
  // --job sees job after job on a node).
  // Its counts stay in the exporter's counters, which must never go down.
  std::erase_if(matchers_, [&](const auto& entry) {
    for (const auto& [key, r] : ranks_)
      if (r->consumer.metrics().job == entry.first) return false;
    retired_[0] += entry.second->decided();
    retired_[1] += entry.second->partial();
    retired_[2] += entry.second->unmatched();
    return true;
  });
  out.late_gpu_intervals += retired_[3];
  out.unlinked_records += retired_[4];
  out.node_matched = retired_[0];
  out.node_partial = retired_[1];
  out.node_unmatched = retired_[2];
  for (const auto& [job, matcher] : matchers_) {
    out.node_matched += matcher->decided();
    out.node_partial += matcher->partial();
    out.node_unmatched += matcher->unmatched();
  }
}

NodeSnapshot NodeMetricsReader::poll() {
  NodeSnapshot snap;
  snap.now_ns = trace::monotonic_ns();
  snap.polls = ++polls_;
  for (auto& [key, r] : ranks_) r->segment_seen = r->trace_seen = false;
  read_segments(snap);
  std::vector<Rank*> active = open_traces(snap);
  read_new_records(active);
  sweep_ranks(snap);
  add_matcher_counts(snap);
  std::sort(snap.ranks.begin(), snap.ranks.end(), [](const RankMetrics& a, const RankMetrics& b) {
    return std::tie(a.job, a.rank, a.host, a.pid) < std::tie(b.job, b.rank, b.host, b.pid);
  });
  return snap;
}

void NodeMetricsReader::read_new_records(std::vector<Rank*>& active) {
  std::map<std::size_t, Rank*> by_member;
  for (const auto& [key, r] : ranks_) by_member[r->member] = r.get();
  std::vector<NodeCollectiveMatcher::Share> shares;
  // A chunk per file in turn, so that one rank's long history does not run ahead of the others'
  // through the matcher's window.
  for (bool more = true; more;) {
    more = false;
    for (Rank* r : active) {
      if (!r->trace_open) continue;
      const auto chunk = r->reader.next();
      if (chunk.empty()) {
        r->trace_open = false;
        continue;
      }
      more = true;
      for (const auto& rec : chunk) r->consumer.add(rec);
      r->position = r->reader.position();
    }
    for (Rank* r : active) {
      auto& matcher = matchers_[r->consumer.metrics().job];
      if (!matcher) matcher = std::make_unique<NodeCollectiveMatcher>();
      for (uint64_t comm : r->consumer.take_new_comms()) matcher->add_member(comm);
    }
    for (Rank* r : active) {
      auto& matcher = *matchers_[r->consumer.metrics().job];
      for (const auto& c : r->consumer.take_completed())
        matcher.add(r->member, c.comm, c.seq, c.start_ns, c.end_ns, shares);
    }
    for (const auto& s : shares) {
      auto it = by_member.find(s.member);
      if (it == by_member.end()) continue;  // forgotten meanwhile
      RankMetrics& m = it->second->consumer.metrics();
      ++m.matched_collectives;
      m.peer_wait_s += s.wait_s;
      m.transfer_s += s.transfer_s;
      m.lateness_s += s.lateness_s;
    }
    shares.clear();
  }
}

}  // namespace ncclwatch::live

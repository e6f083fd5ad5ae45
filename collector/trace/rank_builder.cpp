#include "trace/rank_builder.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "kernels/comm_kernel_table.h"
#include "trace/record_check.h"
#include "trace/record_names.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::trace {

using format::RecordKind;

void KindCounts::add(std::span<const format::Record> records) {
  constexpr auto kLast = static_cast<uint8_t>(RecordKind::kCount);
  for (const auto& r : records) {
    const auto k = static_cast<uint8_t>(r.prefix.kind);
    ++by_kind[k < kLast ? k : kLast];
  }
}

RankBuilder::RankBuilder(const format::TraceHeader& header, std::string source) : header_(header) {
  auto& info = trace_.info;
  const auto& p = header.process;
  info.source = std::move(source);
  info.job = bounded_string(p.job, sizeof p.job);
  info.host = bounded_string(p.host, sizeof p.host);
  info.pid = p.pid;
  // Identity fields that fail the plausibility check of the header stay unknown.
  const bool plausible = p.rank >= -1 && p.world_size >= -1 && p.world_size != 0 &&
                         !(p.rank >= 0 && p.world_size > 0 && p.rank >= p.world_size);
  if (plausible) {
    info.rank = p.rank;
    info.world_size = p.world_size;
  }
  info.local_rank = std::max(p.local_rank, -1);
  info.device = std::max(p.device, -1);
  info.losses = model::Losses::of(header);
  const uint32_t policy = format::kernel_filter_policy(header.kernel_filter);
  if (policy == format::kKernelFilterNccl &&
      format::kernel_filter_every(header.kernel_filter) == 0) {
    info.kernels = model::KernelScope::kNcclOnly;
  } else if (policy == format::kKernelFilterSampled &&
             format::kernel_filter_every(header.kernel_filter) >= 2) {
    info.kernels = model::KernelScope::kSampled;
    info.kernel_sample_every = format::kernel_filter_every(header.kernel_filter);
  } else if (info.losses.counts.kernels_filtered > 0) {
    // Filtered by a writer that did not record how: sampled, windows unknown (or nccl).
    info.kernels = model::KernelScope::kSampled;
  }
  info.salvaged = header.state == format::kTraceStateSalvaged;
  info.complete = header.state == format::kTraceStateClosed || info.salvaged;
  constexpr int64_t kMaxTimeNs = int64_t{1} << 62;  // as record_check: beyond it is damage
  if (p.start_monotonic_ns > 0 && p.start_realtime_ns > 0 && p.start_monotonic_ns <= kMaxTimeNs &&
      p.start_realtime_ns <= kMaxTimeNs)
    info.wall_offset_ns = p.start_realtime_ns - p.start_monotonic_ns;
  info.entry_evidence = header.layout_version >= 2;
}

void RankBuilder::note_entry(uint32_t tid, int64_t enter_ns) {
  for (auto& t : latest_entry_) {
    if (t.first != tid) continue;
    t.second = std::max(t.second, enter_ns);
    return;
  }
  latest_entry_.emplace_back(tid, enter_ns);
}

void RankBuilder::note_returned(const model::HookedCall& call) {
  note_entry(call.tid, call.enter_ns);
  auto& last = trace_.last_returned;
  if (last.func == format::Func::kUnknown || call.exit_ns >= last.exit_ns) last = call;
  trace_.info.alive_until_ns = std::max(trace_.info.alive_until_ns, call.exit_ns);
}

void RankBuilder::reserve(const KindCounts& c) {
  trace_.calls.reserve(c[RecordKind::kCall]);
  trace_.kernels.reserve(c[RecordKind::kKernel]);
  trace_.launches.reserve(c[RecordKind::kLaunch]);
  trace_.ranges.reserve(c[RecordKind::kNvtx]);
  trace_.links.reserve(c[RecordKind::kKernelLink]);
  trace_.coll_gpu.reserve(c[RecordKind::kCollGpu]);
  trace_.sched.reserve(c[RecordKind::kSched]);
}

void RankBuilder::add(std::span<const format::Record> records) {
  for (const auto& r : records) {
    if (const char* problem = record_problem(r)) {
      note_skipped(problem);
    } else {
      add_one(r);
    }
    ++index_;
  }
}

void RankBuilder::note_skipped(const char* reason) {
  ++trace_.info.skipped;
  for (auto& s : skipped_) {
    if (s.reason == reason) {
      ++s.count;
      return;
    }
  }
  skipped_.push_back({reason, 1, index_});
}

namespace {

// The sequence-number lane of a call: send and recv count per peer, everything else per comm.
SeqUnwrapper::Lane lane_of(format::Func f) {
  return f == format::Func::kSend   ? SeqUnwrapper::Lane::kSend
         : f == format::Func::kRecv ? SeqUnwrapper::Lane::kRecv
                                    : SeqUnwrapper::Lane::kCollective;
}

}  // namespace

uint64_t RankBuilder::unwrap_seq(uint64_t comm, format::Func func, int32_t peer, uint32_t seq) {
  const auto lane = lane_of(func);
  return seqs_.unwrap(comm, lane, lane == SeqUnwrapper::Lane::kCollective ? -1 : peer, seq);
}

void RankBuilder::add_call(const format::CallRecord& c) {
  model::CallEvent e;
  e.enter_ns = c.t_enter_ns;
  e.exit_ns = c.t_exit_ns;
  e.comm_id = c.comm_id;
  e.func = static_cast<format::Func>(c.prefix.u8a);
  e.seq = unwrap_seq(c.comm_id, e.func, c.peer, c.seq);
  e.count = c.count;
  e.stream = model::fold_stream(c.stream);
  e.peer = c.peer;
  e.group_id = c.group_id;
  e.datatype = c.datatype;
  e.redop = c.redop;
  e.result = static_cast<int8_t>(c.prefix.u8b);
  e.flags = c.prefix.flags & static_cast<uint8_t>(~model::kCallNeverReturned);
  trace_.calls.push_back(e);
  note_returned({e.enter_ns, e.exit_ns, e.comm_id, e.seq, e.count, c.prefix.tid, e.peer, e.group_id,
                 e.func, e.datatype, true, e.redop});
}

void RankBuilder::add_in_flight(const format::InFlightRecord& f) {
  const auto& en = f.entry;
  model::HookedCall h;
  h.enter_ns = en.t_enter_ns;
  h.exit_ns = f.t_seen_ns;
  h.comm_id = en.comm_id;
  h.func = static_cast<format::Func>(en.func);
  if (format::is_collective(h.func) || format::is_p2p(h.func))
    h.seq = unwrap_seq(en.comm_id, h.func, en.peer, en.seq);
  h.count = en.count;
  h.tid = f.prefix.tid;
  h.peer = en.peer;
  h.group_id = en.group_id;
  h.datatype = en.datatype;
  h.redop = en.redop;
  h.returned = false;
  in_flight_.push_back(h);
  note_entry(h.tid, h.enter_ns);
  trace_.info.alive_until_ns = std::max(trace_.info.alive_until_ns, f.t_seen_ns);
}

void RankBuilder::add_comm(const format::CommRecord& c) {
  returned_enters_.push_back(c.t_enter_ns);
  note_returned({c.t_enter_ns, c.t_exit_ns, c.comm_id, 0,
                 static_cast<uint64_t>(std::max(c.nranks, 0)), c.prefix.tid, c.rank, 0,
                 static_cast<format::Func>(c.prefix.u8a), 0, true, 0});
  if (c.prefix.u8b != 0 || c.comm_id == 0) return;  // failed init / NOCOLOR: no comm
  if (comm_index_.contains(c.comm_id)) return;      // re-announced: the first one stands
  comm_index_.emplace(c.comm_id, trace_.comms.size());
  model::CommInfo ci;
  ci.id = c.comm_id;
  ci.parent = c.parent_id;
  ci.handle = c.handle;
  ci.nranks = c.nranks;
  ci.rank = c.rank;
  ci.device = c.device;
  ci.created_by = static_cast<format::Func>(c.prefix.u8a);
  ci.created_ns = c.t_enter_ns;
  trace_.comms.push_back(std::move(ci));
}

void RankBuilder::add_identity(const format::IdentityRecord& id) {
  // Later identity records refine earlier ones; unknown (-1) never erases a known value.
  auto& info = trace_.info;
  if (id.rank >= 0) info.rank = id.rank;
  if (id.world_size > 0) info.world_size = id.world_size;
  if (id.local_rank >= 0) info.local_rank = id.local_rank;
  if (id.device >= 0) info.device = id.device;
  const std::string bus = bounded_string(id.pci_bus_id, sizeof id.pci_bus_id);
  if (!bus.empty()) info.pci_bus_id = bus;
}

void RankBuilder::add_clock(const format::ClockRecord& c) {
  // The anchor read in the narrowest window is the most precise; ties go to the latest.
  auto& info = trace_.info;
  info.alive_until_ns = std::max(info.alive_until_ns, c.monotonic_ns);
  if (!have_clock_ || c.prefix.tid <= best_clock_window_) {
    best_clock_window_ = c.prefix.tid;
    have_clock_ = true;
    info.wall_offset_ns = c.realtime_ns - c.monotonic_ns;
  }
}

void RankBuilder::add_kernel(const format::KernelRecord& k) {
  model::KernelEvent e;
  e.start_ns = k.start_ns;
  e.end_ns = k.end_ns;
  e.stream = k.prefix.tid;
  e.name = k.name_id;  // a string id until finish() maps it to a names index
  e.correlation = k.correlation;
  e.bytes = k.bytes;
  e.device = k.prefix.u8b;
  e.kind = static_cast<format::ActivityKind>(k.prefix.u8a);
  e.nccl = (k.prefix.flags & format::kKernelIsNccl) != 0;
  trace_.kernels.push_back(e);
}

// A hooked call that is not a CallEvent (group, comm end, GetUniqueId) returned.
void RankBuilder::add_returned(int64_t enter_ns, int64_t exit_ns, uint64_t comm_id, uint32_t tid,
                               uint32_t group_id, format::Func func) {
  returned_enters_.push_back(enter_ns);
  note_returned({enter_ns, exit_ns, comm_id, 0, 0, tid, -1, group_id, func, 0, true, 0});
}

void RankBuilder::add_one(const format::Record& r) {
  switch (r.prefix.kind) {
    case RecordKind::kCall:
      add_call(r.call);
      break;
    case RecordKind::kInFlight:
      add_in_flight(r.in_flight);
      break;
    case RecordKind::kComm:
      add_comm(r.comm);
      break;
    case RecordKind::kIdentity:
      add_identity(r.identity);
      break;
    case RecordKind::kClock:
      add_clock(r.clock);
      break;
    case RecordKind::kKernel:
      add_kernel(r.kernel);
      break;
    case RecordKind::kString:
      strings_.add(r.string);
      break;
    case RecordKind::kKernelLink:
      trace_.links.push_back(r.link);
      break;
    case RecordKind::kCollGpu:
      trace_.coll_gpu.push_back(r.coll_gpu);
      break;
    case RecordKind::kLaunch: {
      const auto& l = r.launch;
      trace_.launches.push_back({l.t_enter_ns, l.t_exit_ns, l.stream, l.correlation, l.prefix.tid});
      break;
    }
    case RecordKind::kNvtx: {
      const auto& n = r.nvtx;
      trace_.ranges.push_back({n.start_ns, n.end_ns, n.name_id, n.prefix.tid});
      break;
    }
    case RecordKind::kGroup:  // group membership is on every call (group_id)
      add_returned(r.group.t_enter_ns, r.group.t_exit_ns, 0, r.prefix.tid, r.group.group_id,
                   static_cast<format::Func>(r.prefix.u8a));
      break;
    case RecordKind::kCommEnd:
      add_returned(r.comm_end.t_enter_ns, r.comm_end.t_exit_ns, r.comm_end.comm_id, r.prefix.tid, 0,
                   static_cast<format::Func>(r.prefix.u8a));
      break;
    case RecordKind::kUniqueId:  // joins NCCL logs; not part of the model yet
      add_returned(r.unique_id.t_enter_ns, r.unique_id.t_exit_ns, 0, r.prefix.tid, 0,
                   format::Func::kGetUniqueId);
      break;
    case RecordKind::kSched:
      trace_.sched.push_back({r.sched.t_ns, r.prefix.tid, r.sched.on_cpu_ns, r.sched.wait_ns});
      break;
    case RecordKind::kStep:
      if (keep_steps_ || whole_run_) {
        trace_.steps.push_back(r.step);
      } else {
        ++trace_.steps_not_kept;
      }
      break;
    case RecordKind::kWindow:
      add_window(r.window);
      break;
    case RecordKind::kGpuTiming:
      trace_.gpu_timing.push_back(r.gpu_timing);
      break;
    case RecordKind::kInvalid:
    case RecordKind::kCount:
      break;
  }
}

// Open and close records of one window share its id; a close without its open (the open record
// evicted, or dropped) still gives the whole window.
void RankBuilder::add_window(const format::WindowRecord& w) {
  if (w.prefix.u8a == static_cast<uint8_t>(format::WindowTrigger::kWholeRun)) whole_run_ = true;
  const bool close = w.prefix.u8b == static_cast<uint8_t>(format::WindowEvent::kClose);
  model::WindowMark* mark = nullptr;
  for (auto it = trace_.windows.rbegin(); it != trace_.windows.rend(); ++it) {
    if (it->id == w.id && !it->closed) {
      mark = &*it;
      break;
    }
  }
  if (mark == nullptr) {
    trace_.windows.emplace_back();
    mark = &trace_.windows.back();
    mark->id = w.id;
    mark->first_step = w.first_step;
    mark->requested_realtime_ns = w.requested_realtime_ns;
    window_text_ids_.push_back(w.prefix.tid);
  } else if (w.prefix.tid != 0) {
    window_text_ids_[static_cast<std::size_t>(mark - trace_.windows.data())] = w.prefix.tid;
  }
  mark->trigger = static_cast<format::WindowTrigger>(w.prefix.u8a);
  mark->start_ns = w.start_ns;
  mark->end_step = w.end_step;
  if (w.first_step != format::kNoStep) mark->first_step = w.first_step;
  if (close) {
    mark->end_ns = w.end_ns;
    mark->detail_records = w.detail_records;
    mark->closed = true;
  }
}

// In-flight records of calls that later returned are superseded by their return record (same
// entry time) or by a later entry of their thread; several records of one call (drain, then
// salvage) are one call. What is left never returned: kept in never_returned, and collectives /
// send/recv also become calls flagged kCallNeverReturned, so the matcher sees that the rank entered
// them.
void RankBuilder::resolve_in_flight() {
  std::sort(returned_enters_.begin(), returned_enters_.end());
  std::sort(in_flight_.begin(), in_flight_.end(), [](const auto& a, const auto& b) {
    return std::tie(a.enter_ns, a.tid, a.exit_ns) < std::tie(b.enter_ns, b.tid, b.exit_ns);
  });
  const auto returned = [&](const model::HookedCall& h) {
    // Its thread entered a hooked call after it: it returned (a thread is in one at a time),
    // though its return record is not here (left out outside a capture window by a shim that
    // did not keep it yet, or dropped by a full ring).
    for (const auto& t : latest_entry_)
      if (t.first == h.tid && t.second > h.enter_ns) return true;
    if (std::binary_search(returned_enters_.begin(), returned_enters_.end(), h.enter_ns))
      return true;
    auto it = std::lower_bound(trace_.calls.begin(), trace_.calls.end(), h.enter_ns,
                               [](const model::CallEvent& c, int64_t t) { return c.enter_ns < t; });
    for (; it != trace_.calls.end() && it->enter_ns == h.enter_ns; ++it) {
      if (it->func == h.func) return true;
    }
    return false;
  };
  for (std::size_t i = 0; i < in_flight_.size(); ++i) {
    const auto& h = in_flight_[i];
    // Same call again (records sorted by entry time, thread, then seen time: keep the latest).
    if (i + 1 < in_flight_.size() && in_flight_[i + 1].enter_ns == h.enter_ns &&
        in_flight_[i + 1].tid == h.tid)
      continue;
    if (returned(h)) continue;
    trace_.never_returned.push_back(h);
  }
  for (const auto& h : trace_.never_returned) {
    if (!format::is_collective(h.func) && !format::is_p2p(h.func)) continue;
    model::CallEvent e;
    e.enter_ns = h.enter_ns;
    e.exit_ns = h.exit_ns;
    e.comm_id = h.comm_id;
    e.seq = h.seq;
    e.count = h.count;
    e.peer = h.peer;
    e.group_id = h.group_id;
    e.func = h.func;
    e.datatype = h.datatype;
    e.redop = h.redop;
    e.flags = model::kCallNeverReturned;
    trace_.calls.push_back(e);
  }
}

// Communication kernels: NCCL's as the shim flagged them, the other families of the table by
// name (classified once per name).
void RankBuilder::classify_kernels() {
  std::vector<model::CommFamily> family_of(trace_.names.size(), model::CommFamily::kCount);
  for (auto& k : trace_.kernels) {
    if (k.nccl) {
      k.family = model::CommFamily::kNccl;
      continue;
    }
    if (k.kind != format::ActivityKind::kKernel || k.name >= family_of.size()) continue;
    model::CommFamily& f = family_of[k.name];
    if (f == model::CommFamily::kCount) f = kernels::classify_kernel(trace_.name_of(k.name)).family;
    k.family = f;
    k.nccl = f != model::CommFamily::kNone;
  }
}

model::RankTrace RankBuilder::finish(std::vector<model::InputProblem>& problems) {
  auto& info = trace_.info;
  info.records = index_;
  const auto say = [&](std::string message) {
    problems.push_back({info.source, std::move(message)});
  };

  if (!skipped_.empty()) {
    std::string line = fmt::format("skipped {} invalid record(s):", info.skipped);
    for (std::size_t i = 0; i < skipped_.size(); ++i) {
      line += fmt::format("{} {} x {} (first at record #{})", i ? ";" : "", skipped_[i].count,
                          skipped_[i].reason, skipped_[i].first_index);
    }
    say(std::move(line));
  }

  // Names: map string ids to indices into names (names[0] stays "").
  strings_.finish();
  // String ids are small per-process counters, so a flat table serves nearly all lookups (one
  // per kernel); the hash map only takes absurd ids from damaged files.
  constexpr uint32_t kFlatIds = 1u << 16;
  std::vector<uint32_t> flat_index;
  std::unordered_map<uint32_t, uint32_t> sparse_index;
  const auto intern = [&](uint32_t string_id) -> uint32_t {
    if (string_id == 0) return 0;
    uint32_t* slot = nullptr;
    if (string_id < kFlatIds) {
      if (flat_index.empty()) flat_index.assign(kFlatIds, 0);
      slot = &flat_index[string_id];
    } else {
      slot = &sparse_index[string_id];
    }
    if (*slot == 0) {
      const std::string* text = strings_.text(string_id);
      trace_.names.push_back(text ? *text : fmt::format("<name #{} missing>", string_id));
      *slot = static_cast<uint32_t>(trace_.names.size() - 1);
    }
    return *slot;
  };
  for (auto& k : trace_.kernels) k.name = intern(k.name);
  for (auto& rg : trace_.ranges) rg.name = intern(rg.name);
  classify_kernels();
  for (std::size_t i = 0; i < trace_.windows.size(); ++i) {
    const uint32_t id = window_text_ids_[i];
    if (id != 0) trace_.windows[i].text = trace_.name_of(intern(id));
  }
  if (strings_.incomplete() != 0)
    say(fmt::format("{} name(s) incomplete (string chunks missing)", strings_.incomplete()));

  // Sorted vectors. Ring order is nearly time order, so usually nothing moves.
  const auto sort_by = [](auto& v, auto key) {
    const auto less = [&](const auto& a, const auto& b) { return key(a) < key(b); };
    if (!std::is_sorted(v.begin(), v.end(), less)) std::sort(v.begin(), v.end(), less);
  };
  sort_by(trace_.calls, [](const model::CallEvent& c) { return std::pair(c.enter_ns, c.seq); });
  if (!in_flight_.empty()) {
    resolve_in_flight();
    sort_by(trace_.calls, [](const model::CallEvent& c) { return std::pair(c.enter_ns, c.seq); });
  }
  sort_by(trace_.kernels,
          [](const model::KernelEvent& k) { return std::pair(k.start_ns, k.end_ns); });
  sort_by(trace_.launches, [](const model::LaunchEvent& l) { return l.enter_ns; });
  sort_by(trace_.sched, [](const model::SchedSample& s) { return std::pair(s.tid, s.t_ns); });
  sort_by(trace_.ranges,
          [](const model::RangeEvent& r) { return std::pair(r.start_ns, r.end_ns); });
  sort_by(trace_.steps, [](const format::StepRecord& st) { return st.start_ns; });
  std::stable_sort(trace_.windows.begin(), trace_.windows.end(),
                   [](const model::WindowMark& a, const model::WindowMark& b) {
                     return a.start_ns < b.start_ns;
                   });
  std::sort(trace_.comms.begin(), trace_.comms.end(),
            [](const model::CommInfo& a, const model::CommInfo& b) {
              return a.created_ns < b.created_ns;
            });

  if (!trace_.kernels.empty()) {
    info.timing = model::TimingSource::kCupti;
  } else if (!trace_.coll_gpu.empty()) {
    info.timing = model::TimingSource::kEvents;
  } else {
    info.timing = model::TimingSource::kHostOnly;
    if (header_.mode == 1 && !trace_.calls.empty())
      say("timing mode says full (CUPTI) but the trace holds no kernel records: host times only");
    if (header_.mode == 2 && !trace_.calls.empty())
      say("timing mode says lite (CUDA events) but the trace holds no GPU intervals: host times "
          "only");
  }
  // The vectors filled without an exact count grew by doubling: a long run keeps one step summary
  // (64 bytes) and one range name per step, ~30 % more than that at capacity, for the job's life.
  trace_.steps.shrink_to_fit();
  trace_.names.shrink_to_fit();
  return std::move(trace_);
}

}  // namespace ncclwatch::trace

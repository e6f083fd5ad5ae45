#include "record/capture_plan.h"

#include <algorithm>
#include <string>

#include "ncclwatch/fnv1a.h"

namespace ncclwatch::shim {
namespace {

using format::RecordKind;

// The same id on every rank for the same window of the schedule (the collector joins ranks'
// windows by it); 0 is the whole run.
uint64_t schedule_id(const std::string& text) {
  const uint64_t h = format::fnv1a64(
      format::kFnv1aOffset, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  return h == 0 ? 1 : h;
}

// The first multiple of `period` strictly after `t` (t >= 0).
int64_t next_multiple(int64_t t, int64_t period) {
  return (t / period + 1) * period;
}

}  // namespace

bool CapturePlan::detail_time(const format::Record& r, int64_t* t) {
  switch (r.prefix.kind) {
    case RecordKind::kCall:
      *t = r.call.t_enter_ns;
      return true;
    case RecordKind::kGroup:
      *t = r.group.t_enter_ns;
      return true;
    case RecordKind::kKernel:
      *t = r.kernel.start_ns;
      return true;
    case RecordKind::kKernelLink:
      *t = r.link.t_ns;
      return true;
    case RecordKind::kCollGpu:
      *t = r.coll_gpu.start_ns;
      return true;
    case RecordKind::kLaunch:
      *t = r.launch.t_enter_ns;
      return true;
    case RecordKind::kNvtx:
      *t = r.nvtx.start_ns;
      return true;
    default:
      return false;
  }
}

void CapturePlan::start(const Settings& settings, Emit emit, int64_t start_ns,
                        int64_t realtime_offset_ns) {
  emit_ = std::move(emit);
  realtime_offset_ns_ = realtime_offset_ns;
  windows_.clear();
  if (settings.detail == DetailLevel::kAll) {
    all_ = true;
    Window w;
    w.id = 0;
    w.trigger = format::WindowTrigger::kWholeRun;
    windows_.push_back(w);
    open_window(windows_.back(), start_ns, 0);
    return;
  }
  schedule_ = settings.capture;
  for (const CaptureItem& item : schedule_) {
    Window w;
    switch (item.kind) {
      case CaptureItem::Kind::kFirst:
        w.id = schedule_id("first:" + std::to_string(item.a));
        w.count = item.a;
        windows_.push_back(w);
        open_window(windows_.back(), start_ns, format::kNoStep);
        break;
      case CaptureItem::Kind::kSteps:
        w.id = schedule_id("steps:" + std::to_string(item.a) + "-" + std::to_string(item.b));
        w.want_first = item.a;
        w.want_end = item.b + 1;
        windows_.push_back(w);
        break;
      case CaptureItem::Kind::kEvery:
        break;
    }
  }
  schedule_every(start_ns);
}

// Plans, for each every:DURATION:N item without a pending window, its next window: N steps from
// the first step that starts at or after the next multiple of DURATION of wall-clock time.
void CapturePlan::schedule_every(int64_t now) {
  next_due_check_ns_ = INT64_MAX;
  for (const CaptureItem& item : schedule_) {
    if (item.kind != CaptureItem::Kind::kEvery) continue;
    const std::string key = "every:" + std::to_string(item.period_ns) + ":";
    bool pending = false;
    for (Window& w : windows_) {
      if (w.state != State::kPending || w.period_ns != item.period_ns || w.count != item.a)
        continue;
      // No step started within a whole period after it came due (a stalled or stepless job): the
      // next multiple replaces it.
      if (now >= w.due_ns + item.period_ns) {
        w.state = State::kClosed;
        w.end_ns = w.start_ns = 0;
        continue;
      }
      pending = true;
      next_due_check_ns_ = std::min(next_due_check_ns_, w.due_ns + item.period_ns);
    }
    if (pending) continue;
    const int64_t due_rt =
        next_multiple(std::max<int64_t>(now + realtime_offset_ns_, 0), item.period_ns);
    Window w;
    w.due_ns = due_rt - realtime_offset_ns_;
    w.period_ns = item.period_ns;
    w.count = item.a;
    w.id = schedule_id(key + std::to_string(due_rt));
    windows_.push_back(w);
    next_due_check_ns_ = std::min(next_due_check_ns_, w.due_ns + item.period_ns);
  }
}

bool CapturePlan::keep(const format::Record& r) {
  if (all_ || !format::is_detail_kind(r.prefix.kind)) return true;
  int64_t t = 0;
  if (!detail_time(r, &t)) return true;
  // Host records come in about the order of their times; GPU records come late, and ahead of
  // the host's clock when the GPU runs behind the launches, so only host records say how far
  // the judging has gone.
  const RecordKind k = r.prefix.kind;
  if (k == RecordKind::kCall || k == RecordKind::kGroup || k == RecordKind::kLaunch ||
      k == RecordKind::kKernelLink)
    judged_ns_ = std::max(judged_ns_, t);
  for (Window& w : windows_) {
    if (w.state != State::kPending && w.start_ns <= t && t < w.end_ns) {
      ++w.detail_records;
      return true;
    }
  }
  return false;
}

bool CapturePlan::in_window(int64_t start_ns, int64_t end_ns) const {
  if (all_) return true;
  return std::any_of(windows_.begin(), windows_.end(), [&](const Window& w) {
    return w.state != State::kPending && w.start_ns < end_ns && start_ns < w.end_ns;
  });
}

bool CapturePlan::open() const {
  return std::any_of(windows_.begin(), windows_.end(),
                     [](const Window& w) { return w.state == State::kOpen; });
}

bool CapturePlan::detail_soon(int64_t now, int64_t lead_ns, uint64_t lead_steps) {
  if (all_) return true;
  bool soon = false;
  for (Window& w : windows_) {
    if (w.state == State::kOpen || w.state == State::kClosing) soon = true;
    if (w.state != State::kPending) continue;
    if (w.want_first != format::kNoStep) {
      if ((w.want_first >= kSecondsFrom) != last_in_seconds_) continue;  // not numbered alike
      const uint64_t at = last_step_ == format::kNoStep ? 0 : last_step_;
      if (at < w.want_end && at + lead_steps >= w.want_first) w.due_soon = true;
    } else if (w.period_ns != 0 && now + lead_ns >= w.due_ns) {
      w.due_soon = true;
    }
    soon = soon || w.due_soon;
  }
  return soon;
}

void CapturePlan::emit_mark(const Window& w, format::WindowEvent event) {
  if (!emit_) return;
  format::Record rec{};
  format::WindowRecord& m = rec.window;
  m.prefix.kind = RecordKind::kWindow;
  m.prefix.u8a = static_cast<uint8_t>(w.trigger);
  m.prefix.u8b = static_cast<uint8_t>(event);
  m.prefix.tid = w.text_id;
  m.id = w.id;
  m.start_ns = w.start_ns;
  m.first_step = w.first_step;
  m.requested_realtime_ns = w.requested_realtime_ns;
  if (event == format::WindowEvent::kClose) {
    m.end_ns = w.end_ns;
    m.end_step = w.end_step;
    m.detail_records = w.detail_records;
  } else {
    m.end_step = w.want_end != format::kNoStep                     ? w.want_end
                 : w.count != 0 && w.first_step != format::kNoStep ? w.first_step + w.count
                                                                   : format::kNoStep;
  }
  emit_(rec);
}

void CapturePlan::open_window(Window& w, int64_t start_ns, uint64_t first_step, bool exact) {
  w.state = State::kOpen;
  // Opened late: detail from the newest record judged on (first_step is then partly captured).
  if (!exact && judged_ns_ != INT64_MIN && judged_ns_ > start_ns + kLateNs)
    start_ns = judged_ns_ + 1;
  w.start_ns = start_ns;
  w.end_ns = INT64_MAX;
  w.first_step = first_step;
  emit_mark(w, format::WindowEvent::kOpen);
}

void CapturePlan::close_window(Window& w, int64_t end_ns, uint64_t end_step, bool exact) {
  if (!exact && judged_ns_ != INT64_MIN && judged_ns_ > end_ns + kLateNs) {
    // Closed late: records up to the newest judged were kept; the window ends there, and its end
    // step is the first step that starts after (step_started, finish).
    w.state = State::kClosing;
    w.end_ns = std::max(judged_ns_ + 1, w.start_ns);
    return;
  }
  w.state = State::kClosed;
  w.end_ns = std::max(end_ns, w.start_ns);
  w.end_step = end_step;
  emit_mark(w, format::WindowEvent::kClose);
}

void CapturePlan::numbering_restarted(int64_t start_ns) {
  if (all_ || last_step_ == format::kNoStep) return;
  const uint64_t end_step = last_step_ + 1;
  for (Window& w : windows_) {
    if (w.state == State::kClosing) {
      w.state = State::kClosed;
      w.end_step = end_step;
      emit_mark(w, format::WindowEvent::kClose);
    } else if (w.state == State::kOpen && !w.timed &&
               (w.count != 0 || w.want_end != format::kNoStep)) {
      close_window(w, start_ns, end_step, true);
    }
  }
}

void CapturePlan::step_started(uint64_t step, int64_t start_ns, bool exact, bool seconds) {
  last_step_ = step;
  last_in_seconds_ = seconds;
  last_step_start_ns_ = start_ns;
  const auto numbered_alike = [&](uint64_t want) { return (want >= kSecondsFrom) == seconds; };
  if (all_) return;
  bool opened_every = false;
  for (Window& w : windows_) {
    if (w.state == State::kClosing && start_ns >= w.end_ns) {
      w.state = State::kClosed;
      w.end_step = step;
      emit_mark(w, format::WindowEvent::kClose);
    } else if (w.state == State::kOpen) {
      if (w.count != 0) {
        // first:N counts the steps it saw; it starts before the first one.
        if (w.first_step == format::kNoStep) w.first_step = step;
        if (++w.steps_seen > w.count) close_window(w, start_ns, step, exact);
      } else if (w.want_end != format::kNoStep && numbered_alike(w.want_first) &&
                 step >= w.want_end) {
        close_window(w, start_ns, step, exact);
      }
    } else if (w.state == State::kPending) {
      if (w.want_first != format::kNoStep) {
        if (!numbered_alike(w.want_first)) continue;  // waits for steps numbered as it is
        if (step >= w.want_end) {
          w.state = State::kClosed;  // over before its steps were known here: never opened
          w.start_ns = w.end_ns = 0;
        } else if (step >= w.want_first) {
          open_window(w, start_ns, step, exact);  // step > want_first: learned late
        }
      } else if (w.period_ns != 0 && start_ns >= w.due_ns) {
        w.steps_seen = 1;
        open_window(w, start_ns, step, exact);
        opened_every = true;
      }
    }
  }
  if (opened_every) schedule_every(start_ns);
}

// The trigger's words as StringRecords (format.h), written once per window.
uint32_t CapturePlan::emit_text(const std::string& text) {
  if (text.empty() || !emit_) return 0;
  const uint32_t id = next_text_id_++;
  if (next_text_id_ == 0) next_text_id_ = kFirstTextId;
  const std::size_t len =
      std::min(text.size(), format::kMaxStringChunks * format::kStringChunkBytes);
  const std::size_t chunks = (len + format::kStringChunkBytes - 1) / format::kStringChunkBytes;
  for (std::size_t c = 0; c < chunks; ++c) {
    format::Record r{};
    r.string.prefix.kind = RecordKind::kString;
    r.string.prefix.tid = id;
    r.string.prefix.u8a = static_cast<uint8_t>(c);
    if (c + 1 == chunks) r.string.prefix.flags = format::kStringLastChunk;
    const std::size_t off = c * format::kStringChunkBytes;
    text.copy(r.string.text, std::min(format::kStringChunkBytes, len - off), off);
    emit_(r);
  }
  return id;
}

bool CapturePlan::request(const format::CaptureAsk& ask, int64_t now, int64_t recent_start_ns) {
  constexpr std::size_t kMaxSeenIds = 256;
  constexpr int64_t kRecentSpanNs = 10'000'000'000;  // a hang window without a span of its own
  if (all_ || ask.id == 0 || (ask.count == 0 && ask.unit != format::kCaptureRecent)) return false;
  if (ask.unit != format::kCaptureSteps && ask.unit != format::kCaptureSeconds &&
      ask.unit != format::kCaptureRecent)
    return false;
  if (std::find(seen_ids_.begin(), seen_ids_.end(), ask.id) != seen_ids_.end()) return false;
  seen_ids_.push_back(ask.id);
  if (seen_ids_.size() > kMaxSeenIds) seen_ids_.pop_front();
  Window w;
  w.id = ask.id;
  w.trigger = ask.trigger;
  w.requested_realtime_ns = ask.requested_realtime_ns;
  w.text_id = emit_text(ask.text);
  if (ask.unit == format::kCaptureRecent) {
    // What each rank was last doing: from the oldest detail still held, exactly (those records
    // are judged again by keep()), for a while after.
    const uint64_t span =
        ask.count == 0 ? kRecentSpanNs : std::min<uint64_t>(ask.count, 86'400ULL * 1'000'000'000);
    w.timed = true;
    windows_.push_back(w);
    Window& added = windows_.back();
    open_window(added, recent_start_ns == INT64_MIN ? now : std::min(recent_start_ns, now),
                format::kNoStep, /*exact=*/true);
    added.end_ns = now + static_cast<int64_t>(span);
    return true;
  }
  if (ask.unit == format::kCaptureSeconds) {
    const int64_t start =
        ask.first == 0
            ? now
            : static_cast<int64_t>(std::min<uint64_t>(ask.first, INT64_MAX)) - realtime_offset_ns_;
    const uint64_t span = std::min<uint64_t>(ask.count, 7 * 86'400ULL * 1'000'000'000);
    w.timed = true;
    windows_.push_back(w);
    Window& added = windows_.back();
    open_window(added, start, last_step_);
    added.end_ns = start + static_cast<int64_t>(span);
    return true;
  }
  if (ask.unit != format::kCaptureSteps) return false;
  w.want_first = ask.first;
  w.want_end = ask.first + std::min<uint64_t>(ask.count, UINT32_MAX);
  if (last_step_ != format::kNoStep && (w.want_first >= kSecondsFrom) == last_in_seconds_ &&
      last_step_ >= w.want_first) {
    if (last_step_ >= w.want_end) return true;  // over before it reached this rank
    windows_.push_back(w);
    open_window(windows_.back(), last_step_start_ns_, last_step_);  // noticed late
    return true;
  }
  windows_.push_back(w);
  return true;
}

void CapturePlan::poll(int64_t now) {
  if (all_) return;
  for (Window& w : windows_) {
    if (w.timed && w.state == State::kOpen && now >= w.end_ns)
      close_window(w, w.end_ns, last_step_ == format::kNoStep ? format::kNoStep : last_step_ + 1);
  }
  if (now >= next_due_check_ns_) schedule_every(now);
  // Closed windows are forgotten once no late record can belong to them any more.
  std::erase_if(windows_, [now](const Window& w) {
    return w.state == State::kClosed && w.end_ns + kKeepClosedNs < now;
  });
}

void CapturePlan::finish(int64_t now) {
  const uint64_t end_step = last_step_ == format::kNoStep ? 0 : last_step_ + 1;
  for (Window& w : windows_) {
    if (w.state == State::kOpen || w.state == State::kClosing) {
      w.state = State::kClosed;
      w.end_ns = std::min(w.end_ns, std::max(now, w.start_ns));
      w.end_step = end_step;
      emit_mark(w, format::WindowEvent::kClose);
    }
  }
}

}  // namespace ncclwatch::shim

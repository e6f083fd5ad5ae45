// The drain thread's capture windows (docs/always-on.md, "Capture windows"): which detail records
// reach the trace file. Windows come from NCCLWATCH_DETAIL=all (the whole run, id 0) or from the
// schedule of NCCLWATCH_CAPTURE (first:N, steps:A-B, every:DURATION:N). A window is a span of host
// time [start, end): a detail record (format::is_detail_kind) is kept when the time it describes
// falls inside one, so GPU records that CUPTI delivers a second late still land in the window they
// ran in; every other record is always kept. Windows of the schedule open and close on step
// boundaries (step_summarizer.h says when a step starts), so every rank captures the same step
// numbers; one that learns of its first step late (the step structure is still being learned)
// starts at the current step and its marks say so.
//
// Everything here runs on the drain thread (or in finish(), after it stopped): no locks.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "ncclwatch/capture_control.h"
#include "ncclwatch/format.h"
#include "record/settings.h"

namespace ncclwatch::shim {

class CapturePlan {
 public:
  // Window marks (WindowRecords) go through the ring like every record.
  using Emit = std::function<void(const format::Record&)>;
  // How long a closed window is remembered: GPU records of its steps come late (CUPTI hands its
  // buffers over every second or so; step summaries wait up to 5 s for them).
  static constexpr int64_t kKeepClosedNs = 30'000'000'000;
  // A step boundary learned after host records past it were judged (steps learned late: the
  // backlog replayed when the step structure is decided, after ~100 collectives or the 3 s wait
  // for NVTX; NVTX ranges, which come about a second late; seconds of host time) opens or closes a
  // window at the newest host record judged instead, when that is more than kLateNs past the
  // boundary: what was judged stays judged, and the marks say what was kept. A boundary learned
  // from the step's own first collective as it is drained is exact (step_started's `exact`):
  // records judged before it with later times are only the launches inside that call.
  static constexpr int64_t kLateNs = 1'000'000;

  // Starts the plan at `start_ns` (host clock; the process's start): the whole run
  // (DetailLevel::kAll) or the schedule's windows. `realtime_offset_ns` = CLOCK_REALTIME -
  // host clock, for every:DURATION windows (multiples of DURATION of wall-clock time, the same
  // moments on every host).
  void start(const Settings& settings, Emit emit, int64_t start_ns, int64_t realtime_offset_ns);

  // Whether a record reaches the trace file: every always-tier kind; a detail kind whose time
  // lies inside a window (counted for the window's close mark).
  bool keep(const format::Record& record);
  // Whether [start, end) overlaps a window: the StepRecord's kStepDetail flag.
  bool in_window(int64_t start_ns, int64_t end_ns) const;
  bool detail_all() const { return all_; }
  bool open() const;
  // Whether a window is open, or due within `lead_ns` (every:DURATION) or `lead_steps` steps
  // (steps requested or scheduled): GPU timing must run by then (gpu_switch.h). A window once
  // due stays so until it closes: the steps a second takes vary, and GPU timing must not
  // flap on and off ahead of it.
  bool detail_soon(int64_t now, int64_t lead_ns, uint64_t lead_steps);

  // A step started (step_summarizer.h, in step order): opens and closes step-aligned windows.
  // `seconds`: the rank counts seconds of the clock (StepSource::kInterval, the learner's
  // fallback), its step numbers Unix seconds. A window is judged only on steps numbered as it is:
  // one asked for in Unix seconds (the asker's seconds mode: numbers past kSecondsFrom) on
  // seconds, one in the job's step numbers (steps:A-B, `ncclwatch capture --steps`) on learned
  // steps; on the others it waits (every A-B would look long over on Unix seconds).
  void step_started(uint64_t step, int64_t start_ns, bool exact = false, bool seconds = false);
  // Step numbers from here on are Unix seconds (2001-09-09): no job counts a billion steps.
  static constexpr uint64_t kSecondsFrom = 1'000'000'000;
  // Step numbering restarts at `start_ns` (step_summarizer.h: a rank that counted seconds of the
  // clock while it learned switches to learned steps, numbered as the job numbers them): a
  // window counted in steps that is open there closes there, its end step the clock second that
  // would have followed (the marks say what the trace holds, in the numbers it was counted in);
  // windows asked for later step numbers wait for them in the learned numbers.
  void numbering_restarted(int64_t start_ns);
  // A request (`ncclwatch capture` through the segment or the control file, or capture by
  // itself): steps [first, first + count), or `count` ns from CLOCK_REALTIME `first` (0: now), or
  // (kCaptureRecent, a hang) from `recent_start_ns` -- the oldest detail record the drain thread
  // still holds, which the caller then passes through keep() -- until `count` ns after now.
  // false when its id was seen before or detail is all anyway (nothing done). Steps already begun
  // here start at once (the marks say which step); steps already over are not opened. The ask's
  // text goes into StringRecords (ids from kFirstTextId) named by the marks' prefix.tid.
  bool request(const format::CaptureAsk& ask, int64_t now, int64_t recent_start_ns = INT64_MIN);
  // The drain thread's own string ids, above any the GPU timeline's string table gives out.
  static constexpr uint32_t kFirstTextId = 0x80000000u;
  // Time-based transitions (every:DURATION windows coming due, time windows ending); forgets old
  // closed windows.
  void poll(int64_t now);
  // Exit: closes what is open at `now`; `last_step` the newest step started (kNoStep: none).
  void finish(int64_t now);

  // For tests: the windows remembered (open, pending, recently closed).
  std::size_t windows() const { return windows_.size(); }
  uint64_t last_step() const { return last_step_; }

  // The time a detail record describes (the start of what it describes); false for other kinds.
  static bool detail_time(const format::Record& record, int64_t* t_ns);

 private:
  // kClosing: its end is fixed but its end step not yet known (it closed late: see close_window).
  enum class State : uint8_t { kPending, kOpen, kClosing, kClosed };
  struct Window {
    uint64_t id = 0;
    format::WindowTrigger trigger = format::WindowTrigger::kSchedule;
    State state = State::kPending;
    // What it asks for: steps [want_first, want_end), or `count` steps from the first step that
    // starts at or after `due_ns` (0: from the start).
    uint64_t want_first = format::kNoStep;
    uint64_t want_end = format::kNoStep;
    uint64_t count = 0;
    int64_t due_ns = 0;
    int64_t period_ns = 0;  // every:DURATION:N -> DURATION
    bool timed = false;     // a request in seconds: [start_ns, end_ns) fixed when asked
    int64_t requested_realtime_ns = 0;
    // What it got.
    int64_t start_ns = 0;
    int64_t end_ns = INT64_MAX;
    uint64_t first_step = format::kNoStep;
    uint64_t end_step = format::kNoStep;
    uint64_t steps_seen = 0;
    uint64_t detail_records = 0;
    bool due_soon = false;  // detail_soon said so once
    uint32_t text_id = 0;   // StringRecord id of what asked for it, 0: none
  };

  void open_window(Window& w, int64_t start_ns, uint64_t first_step, bool exact = false);
  void close_window(Window& w, int64_t end_ns, uint64_t end_step, bool exact = false);
  void emit_mark(const Window& w, format::WindowEvent event);
  void schedule_every(int64_t now);
  uint32_t emit_text(const std::string& text);

  Emit emit_;
  std::vector<CaptureItem> schedule_;
  bool all_ = false;
  std::deque<Window> windows_;    // in the order they were planned
  bool last_in_seconds_ = false;  // last_step_ is a Unix second (step_started's `seconds`)
  uint64_t last_step_ = format::kNoStep;
  int64_t last_step_start_ns_ = 0;
  int64_t realtime_offset_ns_ = 0;
  int64_t next_due_check_ns_ = INT64_MAX;
  int64_t judged_ns_ = INT64_MIN;  // the newest time of a host detail record judged so far
  std::deque<uint64_t> seen_ids_;  // requests applied (the segment and the file carry the same)
  uint32_t next_text_id_ = kFirstTextId;
};

}  // namespace ncclwatch::shim

// The one live recorder of a process: settings, segment + ring, trace file and drain thread.
// Created by ensure_recorder() at the first NCCL call; finished by the atexit handler.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "record/auto_trigger.h"
#include "record/capture_inbox.h"
#include "record/capture_plan.h"
#include "record/gpu_switch.h"
#include "record/in_flight_monitor.h"
#include "record/in_flight_returns.h"
#include "record/recent_records.h"
#include "record/ring.h"
#include "record/sched_sampler.h"
#include "record/segment.h"
#include "record/settings.h"
#include "record/step_summarizer.h"
#include "record/steps_board.h"
#include "record/trace_parts.h"

namespace ncclwatch::shim {

class RecorderInstance {
 public:
  // nullptr + *error (one line) when the segment or the trace file cannot be created.
  static std::unique_ptr<RecorderInstance> create(const Settings& settings, std::string* error);
  ~RecorderInstance();

  Ring& ring() { return ring_; }
  const Settings& settings() const { return settings_; }
  format::SegmentHeader* header() const { return segment_->header(); }
  const std::string& segment_name() const { return segment_->name(); }
  const std::string& trace_path() const { return trace_path_; }
  // The records a drained batch can keep without the drain thread allocating (tests: a
  // worst-case batch leaves it unchanged).
  std::size_t kept_capacity() const { return kept_.capacity(); }

  // Updates the header's identity (rank, world, local rank, device) and records it.
  void set_identity(int rank, int world_size, int local_rank, int device,
                    format::RankSource source);

  // Stops the drain thread, drains the rest, closes the trace file, removes the segment.
  void finish();
  // Forked child: forget everything the parent owns without touching it.
  void abandon();

 private:
  RecorderInstance() = default;
  void drain_loop();
  bool drain_once();
  // Sleeps one drain period, or less when stop_drain() is called (exit must not wait for it).
  void wait_drain_period();
  void stop_drain();
  void emit_clock();
  // Drains until the ring is empty (exit): skips holes left by dead writers, counting them.
  void drain_rest();
  // The summaries and window marks of the drain thread go through the ring like every record
  // (none while NCCLWATCH_TEST_DRAIN_HOLD holds the drain: tests count exactly what they emit).
  void push_own(const format::Record& record) {
    if (!settings_.test_drain_hold) ring_.push(record);
  }
  // The segment's drain checkpoint (format.h, DrainCheckpoint) after a batch was committed.
  void write_checkpoint();
  // The job's steps through the trace directory (steps_board.h): tells the other ranks the steps
  // this rank learned alone, or takes theirs while it has none.
  void share_steps(int64_t now);
  // Capture requests from the segment and the control file (capture_inbox.h).
  void poll_requests(int64_t now);
  // Applies a request to the plan (a hang's: with the recent detail still held); true if new.
  bool apply_request(const format::CaptureAsk& ask, int64_t now);
  // Capture by itself (auto_trigger.h): a regression seen in the summaries, or the watchdog's
  // `hang_line` (nullptr: none), asks every rank through the control file.
  void auto_capture(int64_t now, const std::string* hang_line);
  // Whether a drained record reaches the file (kept_) or is left out (the newest kRecentDetail
  // left out are held for a hang's window).
  void judge(const format::Record& record);
  // NCCLWATCH_MAX_MB: the oldest detail goes (trace_parts.h).
  void enforce_budget();
  void update_summary_timing();
  // NCCLWATCH_SUMMARY_GPU: GPU timing on or off for what the windows need (gpu_switch.h).
  void update_gpu_switch(int64_t now);
  uint32_t timing_mode() const;

  Settings settings_;
  std::unique_ptr<Segment> segment_;
  std::unique_ptr<TraceParts> writer_;
  std::string trace_path_;
  Ring ring_;
  InFlightMonitor monitor_;
  SchedSampler sched_;  // the drain thread's, and finish()'s once it has stopped
  StepSummarizer summarizer_;
  CapturePlan plan_;
  GpuSwitch gpu_switch_;
  CaptureInbox inbox_;
  StepsBoard steps_board_;
  std::optional<format::JobSteps> steps_told_;   // the steps this rank learned alone, once told
  std::optional<format::JobSteps> steps_tried_;  // the last notice this rank tried to take
  AutoTrigger auto_;
  int32_t rank_ = -1;  // from the identity records drained (for the trigger's words)
  static constexpr std::size_t kRecentDetail = 4096;
  RecentRecords recent_;  // the newest detail left out (capacity 0: not held)
  InFlightReturns in_flight_returns_;
  std::vector<format::Record> kept_;           // the batch's records that reach the file
  const format::Record* observing_ = nullptr;  // the record the summarizer is looking at
  std::thread drain_;
  std::atomic<bool> stop_{false};
  // Only the drain thread and finish() use them, never the hot path.
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool write_failed_ = false;
  bool finished_ = false;
};

}  // namespace ncclwatch::shim

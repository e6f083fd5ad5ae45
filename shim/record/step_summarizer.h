// The drain thread's per-step summaries (format.h, StepRecord): from every record it drains it
// finds where steps start (step_learner.h: the collective sequence; or NVTX ranges named like a
// step; or, without either, one second of host time -- also while the collectives' gaps are
// unclear, until the learner decides: Options::clock_fallback_ns) and sums per step what the shim
// can know locally: step time, GPU compute, exposed communication and idle time (unions of the
// kernel intervals, when GPU timing runs), NCCL calls and bytes, and the arrival at the step's
// first collective on the reference comm with that collective's GPU end (the collector compares
// those across ranks: lateness and waiting for peers need the peers). Never on the hot path; memory
// is bounded (a backlog while the step structure is learned, at most kMaxOpenSteps steps waiting
// for their GPU records).
//
// GPU records come late (CUPTI hands over buffers every second or so), so a step is summarized
// once it has ended and either a GPU record after its end has come or gpu_grace_ns has passed.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ncclwatch/format.h"
#include "record/interval_list.h"
#include "record/step_learner.h"

namespace ncclwatch::shim {

class StepSummarizer {
 public:
  static constexpr std::size_t kMaxBacklog = 1 << 16;  // records held while learning
  static constexpr std::size_t kMaxOpenSteps = 512;

  struct Options {
    int64_t host_grace_ns = 200'000'000;   // calls of a step still returning after it ended
    int64_t gpu_grace_ns = 5'000'000'000;  // at most this long after its end for GPU records
    // How long to wait for step-like NVTX ranges (they come through CUPTI, late) before the
    // collective sequence decides; 0 when no NVTX can come (lite, host-only).
    int64_t nvtx_wait_ns = 3'000'000'000;
    // With no step structure (no collectives, or no repeating pattern) after this long, steps
    // are seconds of host time.
    int64_t interval_after_ns = 20'000'000'000;
    // Collectives whose gaps are still unclear this long after the first one on the reference
    // comm (or after StepLearner::kMaxCalls of them, whichever comes first): steps are seconds of
    // host time meanwhile -- summaries flow, step numbers exist -- and the learner goes on; once
    // it learns, steps are the learned ones from the next step start (docs/always-on.md). Long
    // enough for a quiet job of 1 s steps to learn 4 equal buckets (~200 calls) first.
    int64_t clock_fallback_ns = 60'000'000'000;
    // Testing only (NCCLWATCH_TEST_STEPS_FROM_PEERS): the learner is given no call, so the steps
    // come from another rank (adopt) or the clock.
    bool learn_alone = true;
  };
  // Called for every StepRecord (the drain thread pushes it into the ring).
  using Emit = std::function<void(const format::Record&)>;
  // Called when a step starts (for capture windows aligned on steps).
  using StepStarted = std::function<void(uint32_t step, int64_t start_ns)>;
  // Called when step numbering restarts: a rank on clock steps while it learns (Options::
  // clock_fallback_ns) switched to learned steps, whose numbers (the job's, from the collective
  // seq) are below the Unix seconds before; `start_ns` is the first learned step's start, told
  // before its StepStarted. Within a source step numbers only increase, and the source changes at
  // most once, from the clock to learned steps (capture_plan.h closes step windows there).
  using NumberingRestarted = std::function<void(int64_t start_ns)>;
  // Whether full detail was kept over [start, end) (the StepRecord's kStepDetail flag).
  using InWindow = std::function<bool(int64_t start_ns, int64_t end_ns)>;

  // Called for every StepRecord made, with the CUPTI kernel records placed in its step (the
  // auto decision of NCCLWATCH_SUMMARY_GPU counts kernels per step: gpu_switch.h).
  using Summarized = std::function<void(const format::StepRecord& step, uint32_t kernels)>;
  // Whether GPU timing ran throughout [start, end) (it is switched per window: gpu_switch.h); a
  // step it did not cover has no GPU figures (kStepGpuOff) and waits for no GPU record.
  using GpuCovered = std::function<bool(int64_t start_ns, int64_t end_ns)>;

  StepSummarizer() = default;
  explicit StepSummarizer(const Options& options) : options_(options) {}
  void set_emit(Emit emit) { emit_ = std::move(emit); }
  void set_step_started(StepStarted f) { step_started_ = std::move(f); }
  void set_numbering_restarted(NumberingRestarted f) { numbering_restarted_ = std::move(f); }
  void set_in_window(InWindow f) { in_window_ = std::move(f); }
  void set_summarized(Summarized f) { summarized_ = std::move(f); }
  void set_gpu_covered(GpuCovered f) { gpu_covered_ = std::move(f); }
  // Whether GPU records are coming (a step then waits for them); the drain thread says so as the
  // timing mode and the capture windows change.
  void set_gpu_expected(bool expected) { gpu_expected_ = expected; }
  // 0 when no NVTX range can come (lite or host-only timing): steps are decided without waiting.
  void set_nvtx_wait(int64_t ns) { options_.nvtx_wait_ns = ns; }
  void set_learn_alone(bool on) { options_.learn_alone = on; }

  // Every record the drain thread takes from the ring, in ring order.
  void observe(const format::Record& record, int64_t now);
  // Summarizes every step that is complete at `now`; `final` (exit): every step, the last one
  // ending at its last event.
  void flush(int64_t now, bool final);

  // The newest step started so far (format::kNoStep: none) and the median duration of the last
  // summarized steps (0: none yet), for capture planning.
  uint64_t last_step() const { return last_step_; }
  int64_t median_step_ns() const;
  format::StepSource source() const { return source_; }
  bool decided() const { return decided_; }
  // Counting seconds of the clock while the learner goes on (Options::clock_fallback_ns).
  bool on_clock_fallback() const { return clock_fallback_; }
  const StepPattern& pattern() const { return learner_.pattern(); }
  // The reference comm's id (0: not chosen yet).
  uint64_t ref_comm() const { return ref_chosen_ ? ref_comm_ : 0; }
  // The job's steps (ncclwatch/job_steps.h). A rank that learned its pattern alone may publish it
  // (learned_alone); a rank whose reference comm is chosen, with no NVTX step ranges and no
  // learned pattern (learning, counting seconds while it learns, or on the clock for good) takes
  // another rank's pattern of the same comm (adopt: true when taken). Counting seconds, it
  // switches to the pattern's steps from the next step start, as when it learns alone.
  bool learned_alone() const;
  bool wants_job_steps() const;
  bool adopt(uint64_t comm, const StepPattern& pattern);
  // Records that came too late for their step (summarized already) or were dropped from the
  // backlog: said nowhere but in tests and the bench.
  uint64_t late_records() const { return late_; }

 private:
  struct CallItem {
    int64_t enter_ns;
    uint64_t bytes;
    uint32_t seq;
    bool ref;
  };
  struct Step {
    uint32_t number = 0;
    format::StepSource source = format::StepSource::kCollectives;  // how `number` was counted
    int64_t start_ns = 0;
    int64_t end_ns = INT64_MAX;  // until the next step starts
    std::vector<CallItem> calls;
    IntervalList compute, nccl, other;
    bool cupti = false, events = false;
    uint32_t kernels = 0;  // CUPTI kernel records starting in it
    int64_t last_event_ns = 0;
    // Holds what comes before the first step is known (NVTX ranges arrive after their step's
    // records): moved into the first step when it starts, never summarized.
    bool provisional = false;
  };

  void note_comm(const format::CommRecord& c);
  void note_string(const format::StringRecord& s);
  void note_call_for_learning(const format::CallRecord& c, int64_t now);
  void choose_reference();
  void try_decide(int64_t now);
  void decide(format::StepSource source);
  void switch_to_learned();
  void place(const format::Record& r);
  void place_call(const format::CallRecord& c);
  void place_gpu(int64_t start, int64_t end, int which, bool cupti);
  void place_time(int64_t t);
  void add_boundary(uint32_t number, int64_t start_ns);
  Step* step_at(int64_t t);
  void summarize(Step& s, bool last, bool partial);
  uint64_t ref_token(const format::CallRecord& c) const;

  Options options_;
  Emit emit_;
  StepStarted step_started_;
  NumberingRestarted numbering_restarted_;
  InWindow in_window_;
  Summarized summarized_;
  GpuCovered gpu_covered_;
  bool gpu_expected_ = false;

  // Learning.
  bool decided_ = false;
  format::StepSource source_ = format::StepSource::kCollectives;
  bool clock_fallback_ = false;  // decided on the clock while the learner goes on
  std::vector<format::Record> backlog_;
  std::unordered_map<uint64_t, int32_t> comm_ranks_;  // comm id -> nranks
  std::unordered_map<uint64_t, uint32_t> coll_counts_;
  uint64_t ref_comm_ = 0;
  bool ref_chosen_ = false;
  StepLearner learner_;
  int64_t first_event_ns_ = 0;
  int64_t first_ref_ns_ = 0;
  uint32_t mismatched_starts_ = 0;
  // NVTX: string ids whose text looks like a step range, and the step number in the name (or -1).
  std::unordered_map<uint32_t, int64_t> step_names_;
  bool nvtx_seen_ = false;
  uint32_t nvtx_tid_ = 0;
  uint32_t nvtx_counter_ = 0;
  // Interval steps: monotonic -> realtime offset from the clock anchors.
  int64_t realtime_offset_ns_ = 0;
  bool have_clock_ = false;

  // Steps waiting to be summarized, oldest first.
  std::deque<Step> open_;
  uint64_t last_step_ = format::kNoStep;
  int64_t gpu_watermark_ns_ = 0;
  bool timing_cupti_ = false;  // a CUPTI kernel record came: GPU timing is CUPTI's
  // GPU end of reference collectives (seq -> end), and CUPTI correlation -> seq of their launches.
  std::unordered_map<uint32_t, int64_t> ref_gpu_end_;
  std::unordered_map<uint32_t, uint32_t> ref_correlation_;
  std::deque<int64_t> recent_durations_;
  uint64_t late_ = 0;
};

// True if an NVTX range name looks like a training step ("ProfilerStep#12", "train_step",
// "step 3", "Step"); *number is the step number in it, or -1. Exposed for tests.
bool looks_like_step_name(const std::string& name, int64_t* number);

}  // namespace ncclwatch::shim

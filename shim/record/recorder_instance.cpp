#include "record/recorder_instance.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "ncclwatch/seqlock_copy.h"
#include "record/clock.h"
#include "record/process_identity.h"
#include "record/recorder.h"

namespace ncclwatch::shim {
namespace {

constexpr uint64_t kDrainBatch = 512;
constexpr int64_t kClockPeriodNs = 1'000'000'000;  // one anchor per second of run time

format::ProcessInfo make_process_info(const Settings& s) {
  format::ProcessInfo p{};
  std::strncpy(p.job, s.job.c_str(), format::kJobIdSize - 1);
  std::strncpy(p.host, s.host.c_str(), format::kHostNameSize - 1);
  p.pid = getpid();
  EnvIdentity id = identity_from_env(&process_env);
  p.rank = id.rank;
  p.world_size = id.world_size;
  p.local_rank = id.local_rank;
  p.device = -1;
  ClockAnchor a = read_clock_anchor();
  p.start_monotonic_ns = a.monotonic_ns;
  p.start_realtime_ns = a.realtime_ns;
  return p;
}

}  // namespace

std::unique_ptr<RecorderInstance> RecorderInstance::create(const Settings& settings,
                                                           std::string* error) {
  std::unique_ptr<RecorderInstance> r(new RecorderInstance());
  r->settings_ = settings;
  format::ProcessInfo process = make_process_info(settings);
  r->trace_path_ = settings.dir + "/ncclwatch." + settings.host + "." +
                   std::to_string(static_cast<long>(process.pid)) + ".trace";
  if (r->trace_path_.size() >= format::kPathSize) {
    *error = "trace path too long: " + r->trace_path_;
    return nullptr;
  }
  std::string segment_name = Segment::name_for(settings.job, settings.host, process.pid);
  uint64_t capacity = Segment::capacity_for(settings.ring_mb);
  r->segment_ = Segment::create(segment_name, capacity, process, r->trace_path_, error);
  if (!r->segment_ && capacity > Segment::capacity_for(kDefaultRingMb)) {
    // NCCLWATCH_RING_MB larger than /dev/shm can hold: the default size still records.
    std::fprintf(stderr, "ncclwatch: %s; using the default %g MiB ring\n", error->c_str(),
                 kDefaultRingMb);
    error->clear();
    r->settings_.ring_mb = kDefaultRingMb;
    r->segment_ = Segment::create(segment_name, Segment::capacity_for(kDefaultRingMb), process,
                                  r->trace_path_, error);
  }
  if (!r->segment_) return nullptr;
  TraceParts::Options parts;
  parts.dir = r->settings_.dir;
  parts.host = r->settings_.host;
  parts.pid = process.pid;
  parts.budget_bytes = r->settings_.max_mb << 20;
  r->writer_ = TraceParts::open(parts, r->segment_->header(), error);
  if (!r->writer_) {
    r->segment_->remove();
    return nullptr;
  }
  r->ring_ = Ring(r->segment_->header(), r->segment_->slots());
  r->monitor_ = InFlightMonitor(r->segment_->header(), &r->ring_, settings.hang_s);
  r->sched_ = SchedSampler(r->segment_->header(), &r->ring_);
  r->summarizer_.set_emit([p = r.get()](const format::Record& rec) {
    p->push_own(rec);
    if (rec.prefix.kind == format::RecordKind::kStep)
      p->auto_.observe(rec.step, p->rank_, now_ns());
  });
  // A boundary learned from the step's own first collective as it is drained is exact
  // (capture_plan.h, kLateNs); one found otherwise (a backlog replayed, NVTX, seconds) may be late.
  r->summarizer_.set_step_started([p = r.get()](uint32_t step, int64_t start) {
    const format::Record* now = p->observing_;
    const bool exact = now != nullptr && now->prefix.kind == format::RecordKind::kCall &&
                       now->call.t_enter_ns == start;
    p->plan_.step_started(step, start, exact,
                          p->summarizer_.source() == format::StepSource::kInterval);
  });
  r->summarizer_.set_numbering_restarted(
      [p = r.get()](int64_t start) { p->plan_.numbering_restarted(start); });
  r->summarizer_.set_in_window(
      [p = r.get()](int64_t start, int64_t end) { return p->plan_.in_window(start, end); });
  r->gpu_switch_.start(r->settings_.summary_gpu, r->settings_.detail == DetailLevel::kAll,
                       [p = r.get()](const format::Record& rec) { p->push_own(rec); });
  r->summarizer_.set_gpu_covered(
      [p = r.get()](int64_t start, int64_t end) { return p->gpu_switch_.covered(start, end); });
  r->summarizer_.set_summarized([p = r.get()](const format::StepRecord& step, uint32_t kernels) {
    const uint64_t filtered =
        std::atomic_ref<uint64_t>(p->segment_->header()->losses.kernels_filtered)
            .load(std::memory_order_relaxed);
    p->gpu_switch_.observe_step(step, kernels, filtered, p->timing_mode());
  });
  r->emit_clock();
  r->plan_.start(
      r->settings_, [p = r.get()](const format::Record& rec) { p->push_own(rec); },
      process.start_monotonic_ns, process.start_realtime_ns - process.start_monotonic_ns);
  if (r->settings_.detail == DetailLevel::kWindows) {
    r->inbox_.open(r->settings_.dir, r->settings_.job, process.start_realtime_ns);
    r->auto_ = AutoTrigger(r->settings_.auto_capture, r->settings_.job,
                           process.start_realtime_ns - process.start_monotonic_ns);
    r->recent_ = RecentRecords(kRecentDetail);
  }
  r->steps_board_.open(r->settings_.dir, r->settings_.job, process.start_realtime_ns);
  r->summarizer_.set_learn_alone(!r->settings_.test_steps_from_peers);
  // Reserved once, so that the drain thread never allocates for it: a drained batch keeps at
  // most two records a record (an InFlightRecord and the return of its call, drained and held
  // just before it: judge()), and a hang's window writes the recent detail held, up to recent_'s
  // capacity (apply_request()): in windows mode that is the larger bound.
  r->kept_.reserve(std::max<std::size_t>(2 * kDrainBatch, r->recent_.capacity()));
  r->rank_ = process.rank;
  if (process.rank >= 0) {
    format::Record rec{};
    rec.identity.prefix.kind = format::RecordKind::kIdentity;
    rec.identity.prefix.u8a = static_cast<uint8_t>(format::RankSource::kEnv);
    rec.identity.prefix.tid = thread_id();
    rec.identity.rank = process.rank;
    rec.identity.world_size = process.world_size;
    rec.identity.local_rank = process.local_rank;
    rec.identity.device = -1;
    r->ring_.push(rec);
  }
  // The drain thread must never take the application's signals (SIGINT, SIGTERM, ...).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    r->drain_ = std::thread([p = r.get()] { p->drain_loop(); });
  } catch (const std::exception& e) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    *error = std::string("cannot start the drain thread: ") + e.what();
    r->segment_->remove();
    return nullptr;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return r;
}

RecorderInstance::~RecorderInstance() {
  if (drain_.joinable()) {
    stop_drain();
    drain_.join();
  }
}

void RecorderInstance::stop_drain() {
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
}

void RecorderInstance::wait_drain_period() {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  wake_.wait_for(lock, std::chrono::milliseconds(settings_.drain_ms),
                 [this] { return stop_.load(std::memory_order_acquire); });
}

void RecorderInstance::emit_clock() {
  ClockAnchor a = read_clock_anchor();
  format::Record rec{};
  rec.clock.prefix.kind = format::RecordKind::kClock;
  rec.clock.prefix.tid = static_cast<uint32_t>(a.window_ns > UINT32_MAX ? UINT32_MAX : a.window_ns);
  rec.clock.monotonic_ns = a.monotonic_ns;
  rec.clock.realtime_ns = a.realtime_ns;
  ring_.push(rec);
}

void RecorderInstance::set_identity(int rank, int world_size, int local_rank, int device,
                                    format::RankSource source) {
  format::ProcessInfo& p = segment_->header()->process;
  p.rank = rank;
  p.world_size = world_size;
  if (local_rank >= 0) p.local_rank = local_rank;
  if (device >= 0) p.device = device;
  format::Record rec{};
  rec.identity.prefix.kind = format::RecordKind::kIdentity;
  rec.identity.prefix.u8a = static_cast<uint8_t>(source);
  rec.identity.prefix.tid = thread_id();
  rec.identity.rank = rank;
  rec.identity.world_size = world_size;
  rec.identity.local_rank = p.local_rank;
  rec.identity.device = device;
  ring_.push(rec);
}

void RecorderInstance::share_steps(int64_t now) {
  if (!steps_board_.is_open()) return;
  std::string line;
  if (summarizer_.learned_alone()) {
    format::JobSteps mine;
    mine.comm = summarizer_.ref_comm();
    mine.period = summarizer_.pattern().period;
    mine.phase = summarizer_.pattern().phase;
    mine.start_token = summarizer_.pattern().start_token;
    if (steps_told_ && steps_told_->same_steps(mine)) return;  // said already: no syscall
    // The first rank to learn tells the job; the others, learning the same, stay silent (and if
    // they learned otherwise, the first told stands: ranks that take it then agree with it). A
    // rank whose steps changed since it told them (its pattern broke and it learned again) tells
    // the new ones.
    const std::optional<format::JobSteps>& board = steps_board_.poll(now, &line);
    const bool told_before = steps_told_.has_value();
    const bool someone_told = board && board->comm == mine.comm;
    steps_told_ = mine;
    if (told_before || !someone_told) {
      mine.published_realtime_ns = read_clock_anchor().realtime_ns;
      mine.rank = rank_;
      steps_board_.publish(mine, settings_.host + "." + std::to_string(static_cast<long>(getpid())),
                           &line);
    }
  } else if (summarizer_.wants_job_steps()) {
    const std::optional<format::JobSteps>& board = steps_board_.poll(now, &line);
    if (board && board->comm == summarizer_.ref_comm() &&
        !(steps_tried_ && steps_tried_->same_steps(*board) &&
          steps_tried_->published_realtime_ns == board->published_realtime_ns)) {
      steps_tried_ = board;
      summarizer_.adopt(board->comm, {board->period, board->phase, board->start_token});
    }
  }
  if (!line.empty()) std::fputs(line.c_str(), stderr);
}

void RecorderInstance::poll_requests(int64_t now) {
  if (settings_.detail == DetailLevel::kAll) return;
  std::string line;
  for (const format::CaptureAsk& ask : inbox_.poll(segment_->header()->capture, now, &line)) {
    // Another rank's window by itself starts this rank's cool-down too.
    if (apply_request(ask, now) && AutoTrigger::is_auto(ask.trigger)) auto_.applied(now);
  }
  if (!line.empty()) std::fputs(line.c_str(), stderr);
}

bool RecorderInstance::apply_request(const format::CaptureAsk& ask, int64_t now) {
  if (ask.unit != format::kCaptureRecent) return plan_.request(ask, now);
  // A hang: the window holds the detail still held, oldest first.
  if (!plan_.request(ask, now, recent_.oldest_time())) return false;
  kept_.clear();
  recent_.take_all([&](const format::Record& rec) {
    if (plan_.keep(rec)) kept_.push_back(rec);
  });
  if (!write_failed_ && !kept_.empty() && !writer_->append(kept_.data(), kept_.size())) {
    write_failed_ = true;
    std::fprintf(stderr, "ncclwatch: cannot write %s: %s; records stay in /dev/shm/%s\n",
                 trace_path_.c_str(), std::strerror(errno), segment_->name().c_str());
  }
  return true;
}

void RecorderInstance::judge(const format::Record& record) {
  // The return of a call reported in flight is kept whatever the windows say (in_flight_returns.h).
  const bool a_return = in_flight_returns_.take(record);
  if (plan_.keep(record) || a_return) {
    kept_.push_back(record);
  } else {
    recent_.hold(record);
  }
  if (record.prefix.kind != format::RecordKind::kInFlight || plan_.detail_all()) return;
  // Its return may have been drained (and left out) just before it: the call returned between
  // the monitor's look and its push.
  format::Record ret;
  const format::InFlightRecord& f = record.in_flight;
  if (recent_.take_return(f.prefix.tid, f.entry.t_enter_ns, &ret)) {
    kept_.push_back(ret);
  } else {
    in_flight_returns_.reported(f);
  }
}

void RecorderInstance::auto_capture(int64_t now, const std::string* hang_line) {
  if (settings_.detail != DetailLevel::kWindows) return;
  std::optional<format::CaptureAsk> ask;
  // A hang while a window is open here: its detail is being kept already.
  if (hang_line != nullptr && !plan_.open()) {
    // "ncclwatch: rank 3 waiting 30 s in ncclAllReduce #812 on comm 0x... (host ...": the words
    // between the prefix and the host.
    std::string words = *hang_line;
    if (words.rfind("ncclwatch: ", 0) == 0) words.erase(0, 11);
    words = "hang: " + words.substr(0, words.find(" (host"));
    ask = auto_.hang(words, now);
  }
  if (!ask) ask = auto_.take(now, summarizer_.last_step(), summarizer_.median_step_ns());
  if (!ask) return;
  apply_request(*ask, now);
  auto_.applied(now);
  std::string line;
  inbox_.post(*ask, settings_.host + "." + std::to_string(static_cast<long>(getpid())), &line);
  if (!line.empty()) std::fputs(line.c_str(), stderr);
}

void RecorderInstance::enforce_budget() {
  if (write_failed_) return;
  std::string line;
  const uint64_t removed = writer_->enforce_budget(&line);
  if (removed != 0)
    std::atomic_ref<uint64_t>(segment_->header()->losses.detail_evicted)
        .fetch_add(removed, std::memory_order_relaxed);
  if (!line.empty()) std::fputs(line.c_str(), stderr);
}

void RecorderInstance::write_checkpoint() {
  format::DrainCheckpoint cp{};
  cp.part = writer_->part();
  cp.pos = Ring::counter(segment_->header()->read_pos).load(std::memory_order_acquire);
  cp.file_records = writer_->part_records();
  cp.last_step = summarizer_.last_step();
  cp.step_ns = summarizer_.median_step_ns();
  if (cp.last_step != format::kNoStep)
    cp.steps_from = format::checkpoint_steps_from(summarizer_.source());
  format::seqlock_store(segment_->header()->drain, cp);
}

bool RecorderInstance::drain_once() {
  format::Record batch[kDrainBatch];
  uint64_t n = ring_.peek(batch, kDrainBatch);
  if (n == 0) return false;
  if (write_failed_) return false;  // leave them in the ring: salvage may still save them
  const int64_t now = now_ns();
  // Summarized first: a step that starts with this record opens its window before the record is
  // judged.
  kept_.clear();
  for (uint64_t i = 0; i < n; ++i) {
    observing_ = &batch[i];
    summarizer_.observe(batch[i], now);
    observing_ = nullptr;
    if (batch[i].prefix.kind == format::RecordKind::kIdentity) rank_ = batch[i].identity.rank;
    judge(batch[i]);
  }
  if (!writer_->append(kept_.data(), kept_.size())) {
    write_failed_ = true;
    std::fprintf(stderr, "ncclwatch: cannot write %s: %s; records stay in /dev/shm/%s\n",
                 trace_path_.c_str(), std::strerror(errno), segment_->name().c_str());
    return false;
  }
  ring_.commit(n);
  write_checkpoint();
  return true;
}

void RecorderInstance::drain_loop() {
  int64_t next_clock = now_ns() + kClockPeriodNs;
  while (!stop_.load(std::memory_order_acquire)) {
    if (!settings_.test_drain_hold) {
      std::string hang_line;
      const bool hung = monitor_.scan(now_ns(), &hang_line);
      sched_.sample(now_ns());
      while (drain_once()) {
      }
      // Watchdog: everything is on disk now; say once which call waits (never signal, never
      // block: the job decides what to do with a hang).
      if (hung) std::fputs(hang_line.c_str(), stderr);
      update_summary_timing();
      summarizer_.flush(now_ns(), false);
      share_steps(now_ns());
      poll_requests(now_ns());
      auto_capture(now_ns(), hung ? &hang_line : nullptr);
      plan_.poll(now_ns());
      update_gpu_switch(now_ns());
      enforce_budget();
    }
    // Held (tests only): nothing but what the application emits, so counts are deterministic.
    if (!settings_.test_drain_hold && now_ns() >= next_clock) {
      emit_clock();
      next_clock = now_ns() + kClockPeriodNs;
    }
    wait_drain_period();
  }
}

void RecorderInstance::finish() {
  if (finished_) return;
  finished_ = true;
  stop_drain();  // wakes the drain thread: exit never waits for the rest of a drain period
  if (drain_.joinable()) drain_.join();
  // A thread still inside NCCL at exit (blocked in a collective the process gives up on).
  monitor_.record_all(now_ns(), format::InFlightSource::kExit);
  if (!settings_.test_drain_hold) sched_.sample(now_ns(), /*final=*/true);
  sched_.close_all();
  emit_clock();
  drain_rest();
  // The last steps (their GPU records are all in: the GPU timeline flushed before this), then
  // the window's end, drained like the rest.
  update_summary_timing();
  summarizer_.flush(now_ns(), true);
  plan_.finish(now_ns());
  drain_rest();
  enforce_budget();  // the last part's detail may have passed it since the last drain period
  format::SegmentHeader* h = segment_->header();
  uint64_t dropped = Ring::counter(h->dropped).load();
  uint64_t cupti = Ring::counter(h->cupti_dropped).load();
  // Atomic loads: a CUPTI or application thread may still be counting.
  format::LossCounts losses{};
  for (const auto& field : format::kLossFields)
    losses.*field.counter =
        std::atomic_ref<uint64_t>(h->losses.*field.counter).load(std::memory_order_relaxed);
  writer_->close(h->process, dropped, cupti, h->mode,
                 std::atomic_ref<uint32_t>(h->kernel_filter).load(), losses);
  if (!write_failed_) {
    std::atomic_ref<uint32_t>(h->state).store(format::kSegmentStateClosed);
    segment_->remove();
  }
}

// A slot claimed but never committed belongs to a thread that is still inside emit() (give it a
// moment) or died there: then it is a hole, skipped.
void RecorderInstance::drain_rest() {
  for (int spins = 0; spins < 100; ++spins) {
    while (drain_once()) {
    }
    if (write_failed_ || ring_.pending() == 0) break;
    if (spins >= 20 && ring_.hole_at_read()) {
      ring_.skip_hole();
      std::atomic_ref<uint64_t>(segment_->header()->losses.ring_holes)
          .fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

uint32_t RecorderInstance::timing_mode() const {
  return std::atomic_ref<uint32_t>(segment_->header()->mode).load(std::memory_order_relaxed);
}

void RecorderInstance::update_gpu_switch(int64_t now) {
  const int64_t step_ns = summarizer_.median_step_ns();
  const uint64_t lead_steps =
      step_ns > 0 ? static_cast<uint64_t>(GpuSwitch::kLeadNs / step_ns) + 1 : 1;
  gpu_switch_.poll(now, timing_mode(), plan_.detail_soon(now, GpuSwitch::kLeadNs, lead_steps));
}

// GPU records come (and steps wait for them) when the GPU timeline runs: CUPTI (which also
// brings NVTX ranges) or CUDA events.
void RecorderInstance::update_summary_timing() {
  const uint32_t mode = timing_mode();
  summarizer_.set_gpu_expected(mode == 1 || mode == 2);
  if (mode != 1) summarizer_.set_nvtx_wait(0);
}

void RecorderInstance::abandon() {
  // In the child no drain thread exists; the caller leaks this object so the std::thread (still
  // "joinable" in the copied memory) is never touched.
  writer_->abandon();
  inbox_.abandon();
  steps_board_.abandon();
  segment_->abandon();
  sched_.close_all();  // the child's copies of the descriptors (the parent keeps its own)
  finished_ = true;
}

}  // namespace ncclwatch::shim

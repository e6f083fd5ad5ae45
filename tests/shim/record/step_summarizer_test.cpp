// The drain thread's step summaries (record/step_summarizer.h, interval_list.h) on synthetic
// record streams with known answers: a DDP-like rank (equal buckets, so the gaps decide), CUPTI
// and CUDA-event timing, NVTX step ranges, no step structure at all, GPU records that come late.
// The step learner alone: step_learner_test.cpp.
#include "record/step_summarizer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "record/interval_list.h"

namespace ncclwatch::shim {
namespace {

using format::Record;
using format::RecordKind;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'000 * kMs;
constexpr uint64_t kWorld = 0xabc;
constexpr uint64_t kSide = 0xdef;

Record comm(uint64_t id, int32_t nranks) {
  Record r{};
  r.comm.prefix.kind = RecordKind::kComm;
  r.comm.prefix.u8a = static_cast<uint8_t>(format::Func::kCommInitRank);
  r.comm.comm_id = id;
  r.comm.nranks = nranks;
  return r;
}

Record call(format::Func f, uint64_t comm_id, uint32_t seq, int64_t t, uint64_t count = 1 << 20) {
  Record r{};
  r.call.prefix.kind = RecordKind::kCall;
  r.call.prefix.u8a = static_cast<uint8_t>(f);
  r.call.comm_id = comm_id;
  r.call.seq = seq;
  r.call.t_enter_ns = t;
  r.call.t_exit_ns = t + 10'000;
  r.call.count = count;
  r.call.datatype = 7;  // float32
  return r;
}

Record kernel(int64_t start, int64_t end, bool nccl, uint32_t correlation = 0) {
  Record r{};
  r.kernel.prefix.kind = RecordKind::kKernel;
  r.kernel.prefix.flags = nccl ? format::kKernelIsNccl : 0;
  r.kernel.start_ns = start;
  r.kernel.end_ns = end;
  r.kernel.correlation = correlation;
  return r;
}

Record link(uint64_t comm_id, uint32_t seq, uint32_t correlation) {
  Record r{};
  r.link.prefix.kind = RecordKind::kKernelLink;
  r.link.prefix.u8a = static_cast<uint8_t>(format::Func::kAllReduce);
  r.link.comm_id = comm_id;
  r.link.seq = seq;
  r.link.correlation = correlation;
  return r;
}

Record coll_gpu(uint64_t comm_id, uint32_t seq, int64_t start, int64_t end) {
  Record r{};
  r.coll_gpu.prefix.kind = RecordKind::kCollGpu;
  r.coll_gpu.prefix.u8a = static_cast<uint8_t>(format::Func::kAllReduce);
  r.coll_gpu.comm_id = comm_id;
  r.coll_gpu.seq = seq;
  r.coll_gpu.start_ns = start;
  r.coll_gpu.end_ns = end;
  return r;
}

Record clock_anchor(int64_t mono, int64_t real) {
  Record r{};
  r.clock.prefix.kind = RecordKind::kClock;
  r.clock.monotonic_ns = mono;
  r.clock.realtime_ns = real;
  return r;
}

// A DDP-like rank: one broadcast, then per 10 ms step four equal all-reduce buckets entered in
// a burst (0.1 ms apart) at the step's start; the GPU computes [0, 6) ms, communicates [3, 7)
// ms (1 ms exposed), runs the optimizer [7, 8) ms and idles [8, 10) ms. A side comm of 2 ranks
// carries one small all-reduce per step (not the reference). Optionally GPU records per step:
// CUPTI kernels, CUDA-event intervals, or none.
enum class Gpu { kNone, kCupti, kEvents };
std::vector<Record> ddp_rank(int steps, Gpu gpu, int64_t period = 10 * kMs) {
  std::vector<Record> out = {comm(kWorld, 4), comm(kSide, 2)};
  out.push_back(call(format::Func::kBroadcast, kWorld, 0, kT0 - 5 * kMs));
  uint32_t corr = 1;
  for (int s = 0; s < steps; ++s) {
    const int64_t t = kT0 + s * period;
    for (uint32_t b = 0; b < 4; ++b) {
      const uint32_t seq = 1 + 4 * static_cast<uint32_t>(s) + b;
      out.push_back(call(format::Func::kAllReduce, kWorld, seq, t + b * 100'000));
      if (gpu == Gpu::kCupti && b == 0) out.push_back(link(kWorld, seq, corr));
    }
    out.push_back(call(format::Func::kAllReduce, kSide, static_cast<uint32_t>(s), t + 500'000, 16));
    if (gpu == Gpu::kCupti) {
      out.push_back(kernel(t, t + 6 * kMs, false));
      out.push_back(kernel(t + 3 * kMs, t + 7 * kMs, true, corr++));
      out.push_back(kernel(t + 7 * kMs, t + 8 * kMs, false));
    } else if (gpu == Gpu::kEvents) {
      out.push_back(coll_gpu(kWorld, 1 + 4 * static_cast<uint32_t>(s), t + 3 * kMs, t + 7 * kMs));
    }
  }
  return out;
}

struct Summary {
  std::vector<format::StepRecord> steps;
  std::vector<std::pair<uint32_t, int64_t>> started;
};

Summary summarize(const std::vector<Record>& records, bool gpu, int64_t nvtx_wait = 0,
                  bool final = true) {
  Summary run;
  StepSummarizer::Options o;
  o.nvtx_wait_ns = nvtx_wait;
  StepSummarizer s(o);
  s.set_gpu_expected(gpu);
  s.set_emit([&](const Record& r) { run.steps.push_back(r.step); });
  s.set_step_started([&](uint32_t n, int64_t t) { run.started.emplace_back(n, t); });
  int64_t now = kT0;
  for (const Record& r : records) {
    now += 100'000;
    s.observe(r, now);
  }
  s.flush(now + 60'000 * kMs, final);
  return run;
}

TEST(StepName, LooksLikeAStep) {
  int64_t n = 0;
  EXPECT_TRUE(looks_like_step_name("ProfilerStep#12", &n));
  EXPECT_EQ(n, 12);
  EXPECT_TRUE(looks_like_step_name("step", &n));
  EXPECT_EQ(n, -1);
  EXPECT_TRUE(looks_like_step_name("train_step", &n));
  EXPECT_TRUE(looks_like_step_name("Step 7", &n));
  EXPECT_EQ(n, 7);
  EXPECT_FALSE(looks_like_step_name("Optimizer.step#SGD.step", &n));
  EXPECT_FALSE(looks_like_step_name("lr_scheduler_step", &n));
  EXPECT_FALSE(looks_like_step_name("steps_per_epoch", &n));
  EXPECT_FALSE(looks_like_step_name("forward", &n));
}

TEST(IntervalList, CoalescesSplitsAndMeasures) {
  IntervalList a;
  a.add(10, 20);
  a.add(30, 40);
  a.add(15, 32);  // bridges both
  a.add(50, 60);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a.length(0, 100), 40);
  EXPECT_EQ(a.length(35, 55), 10);
  IntervalList tail = a.split_at(35);
  EXPECT_EQ(a.length(0, 100), 25);
  EXPECT_EQ(tail.length(0, 100), 15);
  IntervalList b;
  b.add(0, 12);
  b.add(18, 100);
  EXPECT_EQ(IntervalList::length_minus(a, b, 0, 100), 6);  // [12, 18)
  EXPECT_EQ(IntervalList::union_length({&a, &b}, 0, 100), 100);
}

TEST(IntervalList, StaysBoundedClosingTheShortestGaps) {
  IntervalList a;
  // 5 ns kernels, 5 ns apart, with a 1000 ns idle gap after every 30th one (fewer long gaps
  // than the list holds).
  int64_t t = 0, idle = 0;
  for (int64_t i = 0; i < 30'000; ++i) {
    a.add(t, t + 5);
    const int64_t gap = i % 30 == 29 ? 1000 : 5;
    if (i + 1 < 30'000 && gap == 1000) idle += gap;
    t += 5 + gap;
  }
  const int64_t end = t - 1000;  // the last kernel's end
  EXPECT_LE(a.size(), IntervalList::kMaxIntervals);
  // Kernel time is never lost and every long gap stays idle: only short gaps were closed.
  EXPECT_GE(a.length(0, end), 30'000 * 5);
  EXPECT_LE(a.length(0, end), end - idle);
}

TEST(StepSummarizer, CuptiStepsHaveTheirBreakdown) {
  const Summary run = summarize(ddp_rank(40, Gpu::kCupti), true);
  ASSERT_EQ(run.steps.size(), 40u);
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    const auto& s = run.steps[i];
    EXPECT_EQ(s.step, i);
    EXPECT_EQ(s.prefix.u8a, static_cast<uint8_t>(format::StepSource::kCollectives));
    EXPECT_EQ(s.prefix.u8b, static_cast<uint8_t>(format::StepTiming::kCupti));
    EXPECT_EQ(s.prefix.tid, 1 + 4 * i);  // the first bucket's seq joins ranks
    EXPECT_EQ(s.start_ns, kT0 + static_cast<int64_t>(i) * 10 * kMs);
    EXPECT_EQ(s.arrive_ns, s.start_ns);
    EXPECT_EQ(s.sync_ns, s.start_ns + 7 * kMs);
    EXPECT_EQ(s.calls, 5u);
    EXPECT_EQ(s.bytes, 4u * 4 * (1 << 20) + 16 * 4);
    if (i + 1 < run.steps.size()) {
      EXPECT_EQ(s.duration_us, 10'000u);
      EXPECT_EQ(s.compute_us, 7'000u);
      EXPECT_EQ(s.exposed_us, 1'000u);
      EXPECT_EQ(s.idle_us, 2'000u);
      EXPECT_EQ(s.prefix.flags, 0);
    } else {
      EXPECT_EQ(s.prefix.flags, format::kStepLast);  // ends at its last event
      EXPECT_EQ(s.duration_us, 8'000u);
    }
  }
  ASSERT_EQ(run.started.size(), 40u);
  EXPECT_EQ(run.started[3].first, 3u);
}

TEST(StepSummarizer, CudaEventsGiveCommunicationOnly) {
  const Summary run = summarize(ddp_rank(30, Gpu::kEvents), true);
  ASSERT_EQ(run.steps.size(), 30u);
  const auto& s = run.steps[5];
  EXPECT_EQ(s.prefix.u8b, static_cast<uint8_t>(format::StepTiming::kEvents));
  EXPECT_EQ(s.compute_us, format::kStepUnknownUs);
  EXPECT_EQ(s.idle_us, format::kStepUnknownUs);
  EXPECT_EQ(s.sync_ns, s.start_ns + 7 * kMs);
}

TEST(StepSummarizer, HostOnlyStepsHaveNoGpuFigures) {
  const Summary run = summarize(ddp_rank(30, Gpu::kNone), false);
  ASSERT_EQ(run.steps.size(), 30u);
  const auto& s = run.steps[10];
  EXPECT_EQ(s.prefix.u8b, static_cast<uint8_t>(format::StepTiming::kNone));
  EXPECT_EQ(s.duration_us, 10'000u);
  EXPECT_EQ(s.compute_us, format::kStepUnknownUs);
  EXPECT_EQ(s.sync_ns, 0);
}

TEST(StepSummarizer, StepsWaitForTheirGpuRecords) {
  StepSummarizer::Options o;
  o.nvtx_wait_ns = 0;
  StepSummarizer s(o);
  s.set_gpu_expected(true);
  std::vector<format::StepRecord> out;
  s.set_emit([&](const Record& r) { out.push_back(r.step); });
  // Host records of 60 steps first, as the ring delivers them; GPU records a while later. (Four
  // equal buckets per step are learned from their gaps at 192 calls: step_learner.h.)
  std::vector<Record> host, gpu;
  for (const Record& r : ddp_rank(60, Gpu::kCupti))
    (r.prefix.kind == RecordKind::kKernel ? gpu : host).push_back(r);
  const int64_t host_end = kT0 + 600 * kMs;
  for (const Record& r : host) s.observe(r, host_end);
  s.flush(host_end + 1000 * kMs, false);
  EXPECT_TRUE(out.empty());  // ended, but their kernels have not come yet
  for (const Record& r : gpu) s.observe(r, host_end + 1000 * kMs);
  s.flush(host_end + 1000 * kMs, false);
  ASSERT_EQ(out.size(), 59u);  // all but the last, which has not ended
  EXPECT_EQ(out[20].compute_us, 7'000u);
  EXPECT_EQ(out[20].prefix.flags & format::kStepGpuPartial, 0);
  // Without GPU records, a step is summarized after the grace anyway, marked partial.
  StepSummarizer late(o);
  late.set_gpu_expected(true);
  std::vector<format::StepRecord> partial;
  late.set_emit([&](const Record& r) { partial.push_back(r.step); });
  for (const Record& r : host) late.observe(r, host_end);
  late.flush(host_end + 10'000 * kMs, false);
  ASSERT_EQ(partial.size(), 59u);
  EXPECT_NE(partial[0].prefix.flags & format::kStepGpuPartial, 0);
}

TEST(StepSummarizer, NvtxRangesWinOverTheCollectives) {
  std::vector<Record> records = ddp_rank(30, Gpu::kCupti);
  Record name{};
  name.string.prefix.kind = RecordKind::kString;
  name.string.prefix.tid = 5;
  name.string.prefix.flags = format::kStringLastChunk;
  std::memcpy(name.string.text, "ProfilerStep#100", 16);
  records.insert(records.begin(), name);
  // Each step's range starts 1 ms before its first bucket (the host stall before it included)
  // and comes late, after the step's records.
  std::vector<Record> with_ranges;
  int step = 0;
  for (const Record& r : records) {
    with_ranges.push_back(r);
    if (r.prefix.kind == RecordKind::kKernel && (r.prefix.flags & format::kKernelIsNccl)) {
      Record range{};
      range.nvtx.prefix.kind = RecordKind::kNvtx;
      range.nvtx.prefix.tid = 77;
      range.nvtx.name_id = 5;
      range.nvtx.start_ns = kT0 + step * 10 * kMs - kMs;
      range.nvtx.end_ns = range.nvtx.start_ns + 9 * kMs;
      with_ranges.push_back(range);
      ++step;
    }
  }
  const Summary run = summarize(with_ranges, true, 3000 * kMs);
  ASSERT_EQ(run.steps.size(), 30u);
  EXPECT_EQ(run.steps[0].prefix.u8a, static_cast<uint8_t>(format::StepSource::kNvtx));
  EXPECT_EQ(run.steps[0].step, 100u);  // every range has the same name: numbered on from it
  EXPECT_EQ(run.steps[4].step, 104u);
  EXPECT_EQ(run.steps[4].start_ns, kT0 + 39 * kMs);
  EXPECT_EQ(run.steps[4].arrive_ns, kT0 + 40 * kMs);  // the first bucket came 1 ms in
}

TEST(StepSummarizer, WithoutStructureStepsAreSecondsOfWallTime) {
  std::vector<Record> records = {clock_anchor(kT0, 5'000 * kMs + 300 * kMs)};
  uint64_t x = 88172645463325252ULL;
  for (uint32_t i = 0; i < 400; ++i) {  // 4 s of p2p traffic only: no collective
    x ^= x << 13;
    x ^= x >> 7;
    Record r = call(format::Func::kSend, kWorld, i, kT0 + i * 10 * kMs, x % 1000);
    r.call.peer = 1;
    records.push_back(r);
  }
  StepSummarizer::Options o;
  o.nvtx_wait_ns = 0;
  o.interval_after_ns = 1000 * kMs;
  StepSummarizer s(o);
  std::vector<format::StepRecord> out;
  s.set_emit([&](const Record& r) { out.push_back(r.step); });
  for (const Record& r : records) s.observe(r, r.call.t_enter_ns);
  s.flush(kT0 + 100'000 * kMs, true);
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(out[0].prefix.u8a, static_cast<uint8_t>(format::StepSource::kInterval));
  EXPECT_EQ(out[0].step, 5u);  // the Unix second of the first call
  EXPECT_EQ(out[1].step, 6u);
  EXPECT_EQ(out[1].duration_us, 1'000'000u);
  EXPECT_EQ(out[1].calls, 100u);
}

// A busy machine hides the step: equal buckets whose forward-pass gap shows in only 3 of every 5
// steps (neither a step nor flat gaps: the learner waits). After clock_fallback_ns the rank's
// steps are seconds of the clock -- summaries from the start, numbered by Unix second -- and once
// the gaps are clear (every step's gap wide) the learner finds the step and the steps are the
// learned ones from the next step start on, numbered as the job numbers them: every call in one
// summary, numbers increasing within each source, one restart between them.
TEST(StepSummarizer, UnclearGapsCountSecondsUntilTheStepIsLearned) {
  constexpr int64_t kSecond = 1'000 * kMs;
  constexpr int64_t kUnixSecond = 1'700'000'000;
  std::vector<Record> records = {clock_anchor(kT0, kUnixSecond * kSecond + 300 * kMs),
                                 comm(kWorld, 4)};
  std::map<uint32_t, int64_t> enter_of;  // seq -> t_enter
  int64_t t = kT0;
  uint32_t seq = 0;
  auto add = [&](int64_t gap) {
    t += gap;
    enter_of[seq] = t;
    records.push_back(call(format::Func::kAllReduce, kWorld, seq++, t));
  };
  add(0);  // the parameters' broadcast, as an all-reduce of the same size
  constexpr int kUnclearSteps = 500, kClearSteps = 1000;
  for (int s = 0; s < kUnclearSteps + kClearSteps; ++s) {
    const bool wide = s >= kUnclearSteps || s % 5 < 3;
    for (int b = 0; b < 4; ++b) add(b == 0 && wide ? 7 * kMs : kMs);
  }
  StepSummarizer::Options o;
  o.nvtx_wait_ns = 0;
  o.clock_fallback_ns = kSecond;
  StepSummarizer sum(o);
  std::vector<format::StepRecord> out;
  std::vector<int64_t> restarts;
  sum.set_emit([&](const Record& r) { out.push_back(r.step); });
  sum.set_numbering_restarted([&](int64_t start) { restarts.push_back(start); });
  bool fell_back = false;
  for (const Record& r : records) {
    sum.observe(r, r.prefix.kind == RecordKind::kCall ? r.call.t_enter_ns + 100'000 : kT0);
    fell_back = fell_back || sum.on_clock_fallback();
  }
  EXPECT_TRUE(fell_back);
  EXPECT_FALSE(sum.on_clock_fallback());
  EXPECT_EQ(sum.source(), format::StepSource::kCollectives);
  EXPECT_EQ(sum.pattern().period, 4u);
  EXPECT_EQ(sum.pattern().phase, 1u);  // the first bucket after the forward pass
  sum.flush(t + 60'000 * kMs, true);

  ASSERT_EQ(restarts.size(), 1u);
  std::size_t learned = 0;
  while (learned < out.size() &&
         out[learned].prefix.u8a == static_cast<uint8_t>(format::StepSource::kInterval))
    ++learned;
  ASSERT_GT(learned, 2u);
  ASSERT_LT(learned, out.size());
  EXPECT_EQ(out[0].step, static_cast<uint32_t>(kUnixSecond));  // from the first call on
  EXPECT_EQ(out[learned].start_ns, restarts[0]);
  uint64_t calls = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    SCOPED_TRACE("summary " + std::to_string(i) + ", step " + std::to_string(out[i].step));
    calls += out[i].calls;
    if (i < learned) {
      if (i > 0) {
        EXPECT_EQ(out[i].step, out[i - 1].step + 1);
      }
      continue;
    }
    EXPECT_EQ(out[i].prefix.u8a, static_cast<uint8_t>(format::StepSource::kCollectives));
    // Step n starts at the call with seq 1 + 4n, as on a rank that learned at once.
    EXPECT_EQ(out[i].start_ns, enter_of[1 + 4 * out[i].step]);
    if (i > learned) {
      EXPECT_EQ(out[i].step, out[i - 1].step + 1);
    }
  }
  EXPECT_GE(out[learned].step, static_cast<uint32_t>(kUnclearSteps));
  EXPECT_EQ(out.back().step, static_cast<uint32_t>(kUnclearSteps + kClearSteps - 1));
  EXPECT_EQ(calls, records.size() - 2);  // every call in one summary
}

// A rank whose gaps never show its step (every gap random: a core shared with other work) counts
// seconds of the clock; given the pattern another rank of the comm learned (job_steps.h), it
// switches to the job's steps from the next step start, numbered as that rank numbers them. A
// pattern of another comm, or one its own calls contradict, is not taken.
TEST(StepSummarizer, ARankWhoseGapsStayUnclearTakesTheJobsSteps) {
  StepSummarizer::Options o;
  o.nvtx_wait_ns = 0;
  // The pattern a rank of the same job learned alone.
  StepSummarizer clean(o);
  for (const Record& r : ddp_rank(200, Gpu::kNone)) clean.observe(r, kT0);
  ASSERT_TRUE(clean.learned_alone());
  ASSERT_FALSE(clean.wants_job_steps());
  const StepPattern told = clean.pattern();
  ASSERT_EQ(told.period, 4u);
  ASSERT_EQ(told.phase, 1u);

  constexpr int64_t kSecond = 1'000 * kMs;
  constexpr int64_t kUnixSecond = 1'700'000'000;
  std::vector<Record> records = {clock_anchor(kT0, kUnixSecond * kSecond), comm(kWorld, 4)};
  std::map<uint32_t, int64_t> enter_of;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  int64_t t = kT0;
  for (uint32_t seq = 0; seq < 6000; ++seq) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t += kMs + static_cast<int64_t>(x % static_cast<uint64_t>(8 * kMs));
    enter_of[seq] = t;
    records.push_back(call(format::Func::kAllReduce, kWorld, seq, t));
  }
  o.clock_fallback_ns = kSecond;
  StepSummarizer noisy(o);
  std::vector<format::StepRecord> out;
  std::vector<int64_t> restarts;
  noisy.set_emit([&](const Record& r) { out.push_back(r.step); });
  noisy.set_numbering_restarted([&](int64_t start) { restarts.push_back(start); });
  const std::size_t half = records.size() / 2;
  for (std::size_t i = 0; i < half; ++i) noisy.observe(records[i], records[i].call.t_enter_ns);
  ASSERT_TRUE(noisy.on_clock_fallback());
  ASSERT_EQ(noisy.ref_comm(), kWorld);
  EXPECT_FALSE(noisy.learned_alone());
  EXPECT_TRUE(noisy.wants_job_steps());
  EXPECT_FALSE(noisy.adopt(kSide, told));                           // another comm
  EXPECT_FALSE(noisy.adopt(kWorld, {4, 1, told.start_token ^ 1}));  // not its calls
  EXPECT_TRUE(noisy.on_clock_fallback());
  EXPECT_TRUE(noisy.adopt(kWorld, told));
  EXPECT_FALSE(noisy.wants_job_steps());
  EXPECT_FALSE(noisy.learned_alone());  // taken, not learned: not told again
  EXPECT_FALSE(noisy.on_clock_fallback());
  EXPECT_EQ(noisy.source(), format::StepSource::kCollectives);
  for (std::size_t i = half; i < records.size(); ++i)
    noisy.observe(records[i], records[i].call.t_enter_ns);
  noisy.flush(t + 60'000 * kMs, true);

  ASSERT_EQ(restarts.size(), 1u);
  std::size_t learned = 0;
  while (learned < out.size() &&
         out[learned].prefix.u8a == static_cast<uint8_t>(format::StepSource::kInterval))
    ++learned;
  ASSERT_GT(learned, 2u);
  ASSERT_LT(learned, out.size());
  EXPECT_EQ(out[learned].start_ns, restarts[0]);
  uint64_t calls = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    calls += out[i].calls;
    if (i < learned) continue;
    SCOPED_TRACE("summary " + std::to_string(i) + ", step " + std::to_string(out[i].step));
    EXPECT_EQ(out[i].prefix.u8a, static_cast<uint8_t>(format::StepSource::kCollectives));
    EXPECT_EQ(out[i].start_ns, enter_of[1 + 4 * out[i].step]);  // as the rank that learned
    if (i > learned) {
      EXPECT_EQ(out[i].step, out[i - 1].step + 1);
    }
  }
  // The switch comes at the first step start after the half that was counted in seconds.
  EXPECT_LE(1 + 4 * out[learned].step, half + 4);
  EXPECT_EQ(out.back().step, (6000u - 1 - 1) / 4);
  EXPECT_EQ(calls, records.size() - 2);
}

}  // namespace
}  // namespace ncclwatch::shim

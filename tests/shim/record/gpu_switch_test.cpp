// GPU timing per window (record/gpu_switch.h, gpu_gate.h; NCCLWATCH_SUMMARY_GPU): the auto
// decision from the measured steps, the changes written as GpuTimingRecords with the time they
// took effect, which steps GPU timing covered, the summaries of steps it did not cover, and the
// capture plan saying when a window is coming.
#include "record/gpu_switch.h"

#include <gtest/gtest.h>

#include <vector>

#include "record/capture_plan.h"
#include "record/gpu_gate.h"
#include "record/step_summarizer.h"
#include "record_builder.h"

namespace ncclwatch::shim {
namespace {

using format::GpuTimingReason;
using format::Record;
using format::RecordKind;

constexpr uint32_t kFull = 1, kLite = 2;
constexpr int64_t kMs = 1'000'000;

format::StepRecord step(uint32_t n, format::StepTiming timing, uint32_t duration_us,
                        uint32_t calls = 4, uint8_t flags = 0) {
  return test_support::step_record({.timing = timing,
                                    .flags = flags,
                                    .step = n,
                                    .calls = calls,
                                    .duration_us = duration_us})
      .step;
}

struct Switch {
  GpuSwitch sw;
  std::vector<format::GpuTimingRecord> records;
  explicit Switch(SummaryGpu setting, bool detail_all = false) {
    set_gpu_timing_wanted(true);
    sw.start(setting, detail_all, [this](const Record& r) {
      ASSERT_EQ(r.prefix.kind, RecordKind::kGpuTiming);
      records.push_back(r.gpu_timing);
    });
  }
  // The warm-up steps and the measured ones, `kernels` each (full mode) or `calls` (lite).
  void measure(uint32_t mode, uint32_t units, uint32_t duration_us) {
    const auto timing = mode == kFull ? format::StepTiming::kCupti : format::StepTiming::kEvents;
    for (uint32_t i = 0; i < GpuSwitch::kWarmupSteps + GpuSwitch::kMeasureSteps; ++i)
      sw.observe_step(step(i, timing, duration_us, units), units, 0, mode);
  }
};

TEST(GpuCost, TheH200StepsJudged) {
  // The launch-bound H200 step: ~80 kernels in 2.9 ms: 5.5 % > 0.5 %.
  const GpuCost launch_bound = judge_gpu_cost(80 * 20, 20, 20 * 2'900'000, 2'000, 5'000);
  EXPECT_NEAR(launch_bound.units_per_step, 80, 1e-9);
  EXPECT_NEAR(launch_bound.fraction, 0.0552, 1e-3);
  EXPECT_TRUE(launch_bound.too_costly);
  // A few long kernels per 10 ms step: 0.08 %.
  const GpuCost gpu_bound = judge_gpu_cost(4 * 20, 20, 20 * 10'000'000, 2'000, 5'000);
  EXPECT_NEAR(gpu_bound.fraction, 0.0008, 1e-6);
  EXPECT_FALSE(gpu_bound.too_costly);
  EXPECT_FALSE(judge_gpu_cost(100, 0, 0, 2'000, 5'000).too_costly);  // nothing measured
}

// Auto in lite mode (the drain thread's own switch: in effect at once): off outside windows once
// measured, on for a window coming, off again after it; every change a record, the first with the
// figures.
TEST(GpuSwitch, AutoSwitchesOffALaunchBoundJobOutsideWindows) {
  Switch s(SummaryGpu::kAuto);
  s.sw.poll(1 * kMs, kLite, false);
  EXPECT_TRUE(gpu_timing_wanted()) << "on until measured";
  EXPECT_TRUE(s.records.empty());
  // Not yet: the warm-up and all but the last measured step.
  for (uint32_t i = 0; i < GpuSwitch::kWarmupSteps + GpuSwitch::kMeasureSteps - 1; ++i)
    s.sw.observe_step(step(i, format::StepTiming::kEvents, 1000, 40), 0, 0, kLite);
  EXPECT_FALSE(s.sw.decided());
  // Steps GPU timing did not wholly cover, or the run's last, are not measured.
  s.sw.observe_step(step(90, format::StepTiming::kNone, 1000, 40), 0, 0, kLite);
  s.sw.observe_step(step(91, format::StepTiming::kEvents, 1000, 40, format::kStepGpuPartial), 0, 0,
                    kLite);
  EXPECT_FALSE(s.sw.decided());
  s.sw.observe_step(step(92, format::StepTiming::kEvents, 1000, 40), 0, 0, kLite);
  ASSERT_TRUE(s.sw.decided());
  EXPECT_TRUE(s.sw.cost().too_costly);  // 40 calls x 2 us = 8 % of 1 ms

  s.sw.poll(10 * kMs, kLite, /*detail_soon=*/true);  // the first window still open
  EXPECT_TRUE(gpu_timing_wanted());
  EXPECT_TRUE(s.records.empty());
  s.sw.poll(20 * kMs, kLite, false);
  EXPECT_FALSE(gpu_timing_wanted());
  ASSERT_EQ(s.records.size(), 1u);
  const format::GpuTimingRecord& off = s.records[0];
  EXPECT_EQ(off.prefix.u8a, 0);
  EXPECT_EQ(off.prefix.u8b, static_cast<uint8_t>(GpuTimingReason::kAuto));
  EXPECT_EQ(off.prefix.tid, kLite);
  EXPECT_EQ(off.t_ns, 20 * kMs);
  EXPECT_EQ(off.step_ns, 1 * kMs);
  EXPECT_EQ(off.units_per_step_x100, 4000u);
  EXPECT_EQ(off.unit_cost_ns, GpuSwitch::kLiteCallCostNs);
  EXPECT_EQ(off.limit_ppm, GpuSwitch::kLimitPpm);
  EXPECT_EQ(off.measured_steps, GpuSwitch::kMeasureSteps);

  s.sw.poll(30 * kMs, kLite, true);  // a window coming
  EXPECT_TRUE(gpu_timing_wanted());
  s.sw.poll(40 * kMs, kLite, false);  // and gone
  ASSERT_EQ(s.records.size(), 3u);
  EXPECT_EQ(s.records[1].prefix.u8a, 1);
  EXPECT_EQ(s.records[1].prefix.u8b, static_cast<uint8_t>(GpuTimingReason::kWindow));
  EXPECT_EQ(s.records[1].t_ns, 30 * kMs);
  EXPECT_EQ(s.records[2].prefix.u8a, 0);
  EXPECT_EQ(s.records[2].prefix.u8b, static_cast<uint8_t>(GpuTimingReason::kWindow));

  EXPECT_TRUE(s.sw.covered(0, 20 * kMs));
  EXPECT_FALSE(s.sw.covered(19 * kMs, 21 * kMs));
  EXPECT_FALSE(s.sw.covered(21 * kMs, 29 * kMs));
  EXPECT_TRUE(s.sw.covered(30 * kMs, 40 * kMs));
  EXPECT_FALSE(s.sw.covered(35 * kMs, 45 * kMs));
  EXPECT_FALSE(s.sw.covered(41 * kMs, 50 * kMs));
}

// Full mode: the change is CUPTI's to make (its thread applies the gate); a change is written
// with the time CUPTI says it took effect, never before it did.
TEST(GpuSwitch, FullModeWritesWhatCuptiApplied) {
  Switch s(SummaryGpu::kAuto);
  s.measure(kFull, 80, 2900);  // the H200's launch-bound step
  ASSERT_TRUE(s.sw.cost().too_costly);
  s.sw.poll(10 * kMs, kFull, false);
  EXPECT_FALSE(gpu_timing_wanted());
  EXPECT_TRUE(s.records.empty()) << "not applied yet";
  EXPECT_TRUE(s.sw.covered(0, 12 * kMs));
  publish_gpu_timing_applied(false, 12 * kMs);
  s.sw.poll(13 * kMs, kFull, false);
  ASSERT_EQ(s.records.size(), 1u);
  EXPECT_EQ(s.records[0].t_ns, 12 * kMs);
  EXPECT_EQ(s.records[0].prefix.u8b, static_cast<uint8_t>(GpuTimingReason::kAuto));
  EXPECT_EQ(s.records[0].units_per_step_x100, 8000u);
  EXPECT_EQ(s.records[0].unit_cost_ns, GpuSwitch::kCuptiKernelCostNs);
  EXPECT_TRUE(s.sw.covered(0, 12 * kMs));
  EXPECT_FALSE(s.sw.covered(11 * kMs, 13 * kMs));
  // On for a window; then off and on again between two polls: the gap counts as uncovered.
  s.sw.poll(20 * kMs, kFull, true);
  EXPECT_TRUE(gpu_timing_wanted());
  publish_gpu_timing_applied(true, 21 * kMs);
  s.sw.poll(22 * kMs, kFull, true);
  publish_gpu_timing_applied(false, 23 * kMs);
  publish_gpu_timing_applied(true, 24 * kMs);
  s.sw.poll(25 * kMs, kFull, true);
  EXPECT_TRUE(s.sw.covered(21 * kMs, 22 * kMs));
  EXPECT_FALSE(s.sw.covered(21 * kMs, 25 * kMs));
  EXPECT_TRUE(s.sw.covered(24 * kMs, 30 * kMs));
  set_gpu_timing_wanted(true);
}

TEST(GpuSwitch, AutoKeepsAGpuBoundJobOnAndSaysWhy) {
  Switch s(SummaryGpu::kAuto);
  s.measure(kFull, 4, 10'000);
  ASSERT_TRUE(s.sw.decided());
  EXPECT_FALSE(s.sw.cost().too_costly);
  s.sw.poll(1 * kMs, kFull, false);
  s.sw.poll(2 * kMs, kFull, false);
  EXPECT_TRUE(gpu_timing_wanted());
  ASSERT_EQ(s.records.size(), 1u);
  EXPECT_EQ(s.records[0].prefix.u8a, 1);
  EXPECT_EQ(s.records[0].prefix.u8b, static_cast<uint8_t>(GpuTimingReason::kAuto));
  EXPECT_EQ(s.records[0].units_per_step_x100, 400u);
  EXPECT_TRUE(s.sw.covered(0, 100 * kMs));
}

// Kernels the filter left out (NCCLWATCH_KERNELS=nccl) cost CUPTI as much: they count.
TEST(GpuSwitch, FilteredKernelsCount) {
  Switch s(SummaryGpu::kAuto);
  for (uint32_t i = 0; i < GpuSwitch::kWarmupSteps + GpuSwitch::kMeasureSteps; ++i)
    s.sw.observe_step(step(i, format::StepTiming::kCupti, 10'000), 1, 100 * i, kFull);
  ASSERT_TRUE(s.sw.decided());
  // 1 kernel recorded + 100 filtered per step, over 10 ms: 2 %.
  EXPECT_NEAR(s.sw.cost().units_per_step, 1 + 100.0 * 20 / 20, 0.01);
  EXPECT_TRUE(s.sw.cost().too_costly);
}

TEST(GpuSwitch, OffRunsOnlyForWindowsAndOnAndDetailAllNeverSwitch) {
  {
    Switch s(SummaryGpu::kOff);
    s.sw.poll(1 * kMs, kLite, true);
    EXPECT_TRUE(s.records.empty());
    s.sw.poll(2 * kMs, kLite, false);
    EXPECT_FALSE(gpu_timing_wanted());
    ASSERT_EQ(s.records.size(), 1u);
    EXPECT_EQ(s.records[0].prefix.u8b, static_cast<uint8_t>(GpuTimingReason::kSetting));
    EXPECT_EQ(s.records[0].units_per_step_x100, 0u);
  }
  for (const bool detail_all : {false, true}) {
    Switch s(detail_all ? SummaryGpu::kOff : SummaryGpu::kOn, detail_all);
    s.measure(kFull, 80, 2900);
    s.sw.poll(1 * kMs, kFull, false);
    EXPECT_TRUE(gpu_timing_wanted());
    EXPECT_TRUE(s.records.empty());
  }
  {
    Switch s(SummaryGpu::kOff);
    s.sw.poll(1 * kMs, 0, false);  // host-only timing: nothing to switch
    EXPECT_TRUE(gpu_timing_wanted());
  }
  set_gpu_timing_wanted(true);
}

// A step GPU timing did not wholly cover is summarized without GPU figures (kStepGpuOff), and
// without waiting for GPU records; a covered one has its figures and its kernels counted.
TEST(GpuSwitch, UncoveredStepsHaveNoGpuFigures) {
  StepSummarizer::Options o;
  o.nvtx_wait_ns = 0;
  o.interval_after_ns = 0;
  StepSummarizer sum(o);
  sum.set_gpu_expected(true);
  std::vector<format::StepRecord> out;
  std::vector<uint32_t> kernels;
  sum.set_emit([&](const Record& r) { out.push_back(r.step); });
  sum.set_summarized([&](const format::StepRecord&, uint32_t k) { kernels.push_back(k); });
  Switch s(SummaryGpu::kOff);
  sum.set_gpu_covered([&](int64_t a, int64_t b) { return s.sw.covered(a, b); });
  s.sw.poll(1, kLite, true);
  s.sw.poll(2, kLite, false);  // off from t = 2
  s.sw.poll(3, kLite, true);   // ... and never on again for long: on from t = 3
  s.sw.poll(4, kLite, false);
  // Steps of one second of host time (no collectives): a clock anchor, then kernels.
  Record clock{};
  clock.clock.prefix.kind = RecordKind::kClock;
  clock.clock.monotonic_ns = 1;
  clock.clock.realtime_ns = 1'000'000'000'000'000'000;
  sum.observe(clock, 10);
  for (int64_t sec = 0; sec < 3; ++sec) {
    Record k{};
    k.kernel.prefix.kind = RecordKind::kKernel;
    k.kernel.start_ns = sec * 1'000'000'000 + 100;
    k.kernel.end_ns = k.kernel.start_ns + 1000;
    sum.observe(k, 20);
  }
  sum.flush(10'000'000'000, true);
  ASSERT_FALSE(out.empty());
  for (const format::StepRecord& st : out) {
    EXPECT_NE(st.prefix.flags & format::kStepGpuOff, 0) << st.step;
    EXPECT_EQ(st.prefix.u8b, static_cast<uint8_t>(format::StepTiming::kNone));
    EXPECT_EQ(st.compute_us, format::kStepUnknownUs);
  }
  ASSERT_EQ(kernels.size(), out.size());
  set_gpu_timing_wanted(true);
}

// The capture plan says when a window is open or coming, so GPU timing is on by then.
TEST(CapturePlan, DetailSoonLeadsAWindowsFirstStep) {
  Settings settings;
  settings.capture = {CaptureItem{CaptureItem::Kind::kSteps, 100, 110, 0}};
  CapturePlan plan;
  plan.start(
      settings, [](const Record&) {}, 0, 0);
  for (uint64_t n = 0; n < 90; ++n) plan.step_started(n, static_cast<int64_t>(n) * kMs);
  EXPECT_FALSE(plan.detail_soon(90 * kMs, 1'000 * kMs, 5));
  EXPECT_TRUE(plan.detail_soon(90 * kMs, 1'000 * kMs, 20));  // step 89 + 20 >= 100
  // The steps of a second vary (a busy machine): once due, it stays so until it has closed.
  EXPECT_TRUE(plan.detail_soon(90 * kMs, 1'000 * kMs, 5));
  for (uint64_t n = 90; n < 105; ++n) plan.step_started(n, static_cast<int64_t>(n) * kMs);
  EXPECT_TRUE(plan.open());
  EXPECT_TRUE(plan.detail_soon(105 * kMs, 0, 0));
  for (uint64_t n = 105; n < 113; ++n) plan.step_started(n, static_cast<int64_t>(n) * kMs);
  EXPECT_FALSE(plan.detail_soon(113 * kMs, 1'000 * kMs, 1'000)) << "over";

  Settings every;
  every.capture = {CaptureItem{CaptureItem::Kind::kEvery, 5, 0, 60'000 * kMs}};
  CapturePlan timed;
  timed.start(
      every, [](const Record&) {}, 0, 0);  // due at 60 s of wall time
  EXPECT_FALSE(timed.detail_soon(58'000 * kMs, 1'000 * kMs, 1));
  EXPECT_TRUE(timed.detail_soon(59'500 * kMs, 1'000 * kMs, 1));
}

}  // namespace
}  // namespace ncclwatch::shim

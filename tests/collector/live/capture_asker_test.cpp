// `ncclwatch capture` from a node with none of the job's ranks (live/capture_asker.h): the step
// a window starts at is planned from the trace files' newest step summaries, counting the steps
// since at the rate the rank numbered its steps -- not at the newest step's own duration, which a
// step cut short on a busy machine (a few us) made a plan hundreds of thousands of steps ahead.
#include "live/capture_asker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "trace_fixture.h"

namespace ncclwatch::live {
namespace {

using trace::testing::TempDir;

int64_t realtime_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A running rank's trace on another host: `steps` step summaries of `step_us` each (process
// `pid`, rank `rank`), the newest ending `ago_ns` before now, its duration `last_us`; numbered
// from `first_number`, counted as `source` says.
void write_running_rank(const std::string& dir, uint32_t steps, int64_t ago_ns, uint32_t last_us,
                        int32_t pid = 77, int32_t rank = 0, int64_t step_us = 1000,
                        uint32_t first_number = 0,
                        format::StepSource source = format::StepSource::kCollectives) {
  format::ProcessInfo p = trace::testing::make_process("j", "elsewhere", pid, rank, 2);
  constexpr int64_t kBase = 5'000'000'000;  // the host clock at the first step
  const int64_t end = kBase + int64_t{steps - 1} * step_us * 1000 + int64_t{last_us} * 1000;
  p.start_monotonic_ns = 1'000'000;
  p.start_realtime_ns = realtime_now() - ago_ns - end + p.start_monotonic_ns;
  std::vector<format::Record> records;
  for (uint32_t s = 0; s < steps; ++s) {
    records.push_back(
        trace::testing::make_step(first_number + s, kBase + int64_t{s} * step_us * 1000,
                                  s + 1 == steps ? last_us : static_cast<uint32_t>(step_us), s * 4,
                                  0, 0, format::kStepUnknownUs, 0, 0));
    records.back().prefix.u8a = static_cast<uint8_t>(source);
  }
  trace::testing::write_trace(
      dir + "/ncclwatch.elsewhere." + std::to_string(pid) + ".trace",
      trace::testing::make_header(p, format::kTraceStateOpen, records.size()), records);
}

TEST(CaptureAsker, StepsSinceTheNewestSummaryCountAtTheRanksStepRate) {
  TempDir dir, shm;
  // The newest step was cut short (3 us) and ended 200 ms ago: about 200 steps of 1 ms since.
  write_running_rank(dir.path(), 2000, 200'000'000, 3);
  CaptureOptions o;
  o.job = "j";
  o.dir = dir.path();
  o.shm_dir = shm.path();  // no segments: as on a node without the job's ranks
  o.steps = 20;
  const CaptureOutcome out = ask_capture(o);
  ASSERT_TRUE(out.ok) << out.error;
  ASSERT_EQ(out.ask.unit, format::kCaptureSteps);
  EXPECT_NEAR(static_cast<double>(out.step_ns), 1e6, 1e4);
  // 1999 + ~200 steps since (more on a slow machine: the seconds between writing and asking),
  // then another node's 3 s to notice: about 3000 steps more.
  EXPECT_GE(out.last_step, 2150u);
  EXPECT_LE(out.last_step, 2199u + 5000u);
  EXPECT_NEAR(static_cast<double>(out.ask.first - out.last_step), 3000.0, 10.0);
  EXPECT_EQ(out.ask.count, 20u);
  EXPECT_TRUE(std::filesystem::exists(out.control_path)) << out.control_path;
}

// Rank 1 numbered its steps 4x as fast as rank 0 (it learned sub-steps where a busy machine blurred
// its gaps): the same step numbers would be different moments on the two, so the window is the
// seconds of the steps asked for at the median step time, the same seconds on every rank.
TEST(CaptureAsker, RanksWhoseStepRatesDisagreeGetTheSameSeconds) {
  TempDir dir, shm;
  write_running_rank(dir.path(), 2000, 0, 1000, 77, 0, 1000);
  write_running_rank(dir.path(), 8000, 0, 250, 78, 1, 250);
  CaptureOptions o;
  o.job = "j";
  o.dir = dir.path();
  o.shm_dir = shm.path();
  o.steps = 20;
  const CaptureOutcome out = ask_capture(o);
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_TRUE(out.step_rates_disagree);
  ASSERT_EQ(out.ask.unit, format::kCaptureSeconds);
  // The median of two step times is the upper one: 20 steps of 1 ms.
  EXPECT_EQ(out.ask.count, 20'000'000u);
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_NE(out.warnings[0].find("step times disagree (0.250 to 1.000 ms"), std::string::npos)
      << out.warnings[0];
  EXPECT_NE(describe(out).find("the ranks' steps disagree"), std::string::npos) << describe(out);
}

// Steps of about a second: rank 1 still counts seconds of the clock (its gaps unclear), rank 0
// learned its steps. Alike step times, but one step number is two moments: seconds.
TEST(CaptureAsker, RanksThatCountStepsDifferentlyGetTheSameSeconds) {
  TempDir dir, shm;
  write_running_rank(dir.path(), 30, 0, 1'000'000, 77, 0, 1'000'000);
  write_running_rank(dir.path(), 30, 0, 1'000'000, 78, 1, 1'000'000, 1'700'000'000,
                     format::StepSource::kInterval);
  CaptureOptions o;
  o.job = "j";
  o.dir = dir.path();
  o.shm_dir = shm.path();
  o.steps = 5;
  const CaptureOutcome out = ask_capture(o);
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_TRUE(out.step_rates_disagree);
  ASSERT_EQ(out.ask.unit, format::kCaptureSeconds);
  EXPECT_EQ(out.ask.count, 5'000'000'000u);
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_NE(out.warnings[0].find("count their steps differently"), std::string::npos)
      << out.warnings[0];
}

// A rank that counted seconds while it learned and then learned its steps (numbers restarted):
// its newest step is the newest learned one, at the learned steps' rate.
TEST(CaptureAsker, ARankThatSwitchedToLearnedStepsIsAtItsNewestLearnedStep) {
  TempDir dir, shm;
  format::ProcessInfo p = trace::testing::make_process("j", "elsewhere", 77, 0, 1);
  p.start_monotonic_ns = 1'000'000;
  p.start_realtime_ns = realtime_now() - 10'000'000'000;
  std::vector<format::Record> records;
  for (uint32_t s = 0; s < 3; ++s) {
    records.push_back(trace::testing::make_step(1'700'000'000 + s,
                                                2'000'000'000 + s * 1'000'000'000, 1'000'000, 0, 0,
                                                0, format::kStepUnknownUs, 0, 0));
    records.back().prefix.u8a = static_cast<uint8_t>(format::StepSource::kInterval);
  }
  for (uint32_t s = 0; s < 1000; ++s)
    records.push_back(trace::testing::make_step(400 + s, 5'000'000'000 + int64_t{s} * 1'000'000,
                                                1000, 0, 0, 0, format::kStepUnknownUs, 0, 0));
  trace::testing::write_trace(
      dir.path() + "/ncclwatch.elsewhere.77.trace",
      trace::testing::make_header(p, format::kTraceStateOpen, records.size()), records);
  CaptureOptions o;
  o.job = "j";
  o.dir = dir.path();
  o.shm_dir = shm.path();
  const CaptureOutcome out = ask_capture(o);
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_FALSE(out.step_rates_disagree);
  ASSERT_EQ(out.ask.unit, format::kCaptureSteps);
  EXPECT_NEAR(static_cast<double>(out.step_ns), 1e6, 1e4);
  EXPECT_GE(out.last_step, 1399u);
  EXPECT_LT(out.last_step, 1'000'000u);
}

// Ranks whose step times differ by the noise of a busy machine (10 %) agree: steps.
TEST(CaptureAsker, RanksWithAlikeStepRatesGetSteps) {
  TempDir dir, shm;
  write_running_rank(dir.path(), 2000, 0, 1000, 77, 0, 1000);
  write_running_rank(dir.path(), 1800, 0, 1100, 78, 1, 1100);
  CaptureOptions o;
  o.job = "j";
  o.dir = dir.path();
  o.shm_dir = shm.path();
  const CaptureOutcome out = ask_capture(o);
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_FALSE(out.step_rates_disagree);
  EXPECT_EQ(out.ask.unit, format::kCaptureSteps);
  EXPECT_EQ(out.ask.count, 20u);
}

}  // namespace
}  // namespace ncclwatch::live

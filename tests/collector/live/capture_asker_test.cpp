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

// A running rank's trace on another host: `steps` step summaries of 1 ms each, the newest ending
// `ago_ns` before now, its duration `last_us`.
void write_running_rank(const std::string& dir, uint32_t steps, int64_t ago_ns, uint32_t last_us) {
  format::ProcessInfo p = trace::testing::make_process("j", "elsewhere", 77, 0, 2);
  constexpr int64_t kBase = 5'000'000'000;  // the host clock at the first step
  const int64_t end = kBase + int64_t{steps - 1} * 1'000'000 + int64_t{last_us} * 1000;
  p.start_monotonic_ns = 1'000'000;
  p.start_realtime_ns = realtime_now() - ago_ns - end + p.start_monotonic_ns;
  std::vector<format::Record> records;
  for (uint32_t s = 0; s < steps; ++s) {
    records.push_back(trace::testing::make_step(s, kBase + int64_t{s} * 1'000'000,
                                                s + 1 == steps ? last_us : 1000, s * 4, 0, 0,
                                                format::kStepUnknownUs, 0, 0));
  }
  trace::testing::write_trace(
      dir + "/ncclwatch.elsewhere.77.trace",
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

}  // namespace
}  // namespace ncclwatch::live

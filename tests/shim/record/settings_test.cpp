// The settings module without LD_PRELOAD: every variable of the table parsed from an injected
// environment, one problem line per bad value, the snapshot and what the first NCCL call says.
#include "record/settings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

namespace ncclwatch::shim {
namespace {

using settings::Id;

std::map<std::string, std::string> g_env;
const char* fake_env(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

std::string problems_of(const Settings& s) {
  std::string all;
  for (const auto& line : s.problems) all += line + "\n";
  return all;
}

TEST(Settings, Defaults) {
  g_env = {{"TORCHELASTIC_RUN_ID", "none"}, {"SLURM_JOB_ID", "1234"}};
  Settings s = read_settings(&fake_env);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.job, "1234");  // torchrun's default run id "none" is skipped
  EXPECT_EQ(s.ring_mb, kDefaultRingMb);
  EXPECT_EQ(s.dir.front(), '/');
  EXPECT_NE(s.dir.find("/ncclwatch-1234"), std::string::npos);
  EXPECT_EQ(s.drain_ms, 2);
  EXPECT_EQ(s.hang_s, 0);
  EXPECT_FALSE(s.test_drain_hold);
  EXPECT_EQ(s.test_clock_offset_ns, 0);
  EXPECT_EQ(s.mode, GpuMode::kFull);
  EXPECT_EQ(s.kernels, KernelPolicy::kAll);
  EXPECT_EQ(s.cupti_clock, CuptiClockChoice::kAuto);
  EXPECT_EQ(s.cupti_buffers, 16u);
  EXPECT_EQ(s.cupti_buffer_kb, 4096u);
  EXPECT_EQ(s.cupti, "");
  EXPECT_EQ(s.cudart, "");
  EXPECT_TRUE(s.nvtx);
  EXPECT_FALSE(s.inherited_nccl_env.has_value());
  EXPECT_TRUE(s.problems.empty()) << problems_of(s);
  g_env = {{"TORCHELASTIC_RUN_ID", "abc"}, {"SLURM_JOB_ID", "1234"}};
  EXPECT_EQ(read_settings(&fake_env).job, "abc");
  g_env = {};
  EXPECT_EQ(read_settings(&fake_env).job, "local-" + std::to_string(getppid()));
}

// The defaults above are the ones the table (and so README) states.
TEST(Settings, DefaultsAreTheTablesDefaults) {
  EXPECT_EQ(settings::variable(Id::kRingMb).default_text, "16");
  EXPECT_EQ(settings::variable(Id::kDrainMs).default_text, "2");
  EXPECT_EQ(settings::variable(Id::kMode).default_text, "full");
  EXPECT_EQ(settings::variable(Id::kKernels).default_text, "all");
  EXPECT_EQ(settings::variable(Id::kCuptiClock).default_text, "auto");
  EXPECT_EQ(settings::variable(Id::kCuptiBuffers).default_text, "16");
  EXPECT_EQ(settings::variable(Id::kCuptiBufferKb).default_text, "4096");
  EXPECT_EQ(settings::variable(Id::kNvtx).default_text, "on");
  EXPECT_EQ(settings::variable(Id::kEnabled).default_text, "on");
  EXPECT_EQ(settings::variable(Id::kTestClockOffsetNs).default_text, "0");
}

TEST(Settings, ExplicitValuesAndSanitizing) {
  g_env = {{"NCCLWATCH_JOB", "my job/1"},
           {"NCCLWATCH_HOST", "node 7"},
           {"NCCLWATCH_DIR", "/x/y/"},
           {"NCCLWATCH_RING_MB", "0.5"},
           {"NCCLWATCH_DRAIN_MS", "7"},
           {"NCCLWATCH_HANG_S", "120"},
           {"NCCLWATCH_TEST_DRAIN_HOLD", "1"},
           {"NCCLWATCH_TEST_CLOCK_OFFSET_NS", "-5000000000"},
           {"NCCLWATCH_MODE", "lite"},
           {"NCCLWATCH_KERNELS", "sampled:4"},
           {"NCCLWATCH_CUPTI_CLOCK", "measured"},
           {"NCCLWATCH_CUPTI_BUFFERS", "64"},
           {"NCCLWATCH_CUPTI_BUFFER_KB", "64"},
           {"NCCLWATCH_CUPTI", "/opt/cupti/libcupti.so"},
           {"NCCLWATCH_CUDART", "/opt/cuda/libcudart.so.13"},
           {"NCCLWATCH_NVTX", "off"},
           {"NCCLWATCH_SET_NCCL_ENV", "NCCL_DEBUG=INFO\n"},
           {"NCCLWATCH", "on"}};
  Settings s = read_settings(&fake_env);
  EXPECT_TRUE(s.problems.empty()) << problems_of(s);
  EXPECT_EQ(s.job, "my_job_1");
  EXPECT_EQ(s.host, "node_7");
  EXPECT_EQ(s.dir, "/x/y");
  EXPECT_DOUBLE_EQ(s.ring_mb, 0.5);
  EXPECT_EQ(s.drain_ms, 7);
  EXPECT_EQ(s.hang_s, 120);
  EXPECT_TRUE(s.test_drain_hold);
  EXPECT_EQ(s.test_clock_offset_ns, -5000000000);
  EXPECT_EQ(s.mode, GpuMode::kLite);
  EXPECT_EQ(s.kernels, KernelPolicy::kSampled);
  EXPECT_EQ(s.kernels_every, 4u);
  EXPECT_EQ(s.cupti_clock, CuptiClockChoice::kMeasured);
  EXPECT_EQ(s.cupti_buffers, 64u);
  EXPECT_EQ(s.cupti_buffer_kb, 64u);
  EXPECT_EQ(s.cupti, "/opt/cupti/libcupti.so");
  EXPECT_EQ(s.cudart, "/opt/cuda/libcudart.so.13");
  EXPECT_FALSE(s.nvtx);
  ASSERT_TRUE(s.inherited_nccl_env.has_value());
  EXPECT_EQ(*s.inherited_nccl_env, "NCCL_DEBUG=INFO\n");
  EXPECT_EQ(s.raw[static_cast<std::size_t>(Id::kJob)], "my job/1");  // as read, for change checks

  g_env = {{"NCCLWATCH", "off"},
           {"NCCLWATCH_MODE", "host"},
           {"NCCLWATCH_KERNELS", "nccl"},
           {"NCCLWATCH_CUPTI_CLOCK", "callback"},
           {"NCCLWATCH_NVTX", "0"}};
  s = read_settings(&fake_env);
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(s.mode, GpuMode::kHost);
  EXPECT_EQ(s.kernels, KernelPolicy::kNccl);
  EXPECT_EQ(s.cupti_clock, CuptiClockChoice::kCallback);
  EXPECT_FALSE(s.nvtx);
  g_env = {{"NCCLWATCH_KERNELS", "sampled:1"}};  // every window: all
  EXPECT_EQ(read_settings(&fake_env).kernels, KernelPolicy::kAll);
}

// An empty value is unset (the default, no line).
TEST(Settings, EmptyValuesAreUnset) {
  g_env = {};
  for (const auto& var : settings::kVariables) g_env[std::string(var.name)] = "";
  Settings s = read_settings(&fake_env);
  EXPECT_TRUE(s.problems.empty()) << problems_of(s);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.mode, GpuMode::kFull);
  EXPECT_EQ(s.cupti, "");
}

TEST(Settings, BadValuesGiveOneLineEachAndTheDefault) {
  g_env = {{"NCCLWATCH_RING_MB", "lots"},
           {"NCCLWATCH_DRAIN_MS", "-3"},
           {"NCCLWATCH", "maybe"},
           {"NCCLWATCH_HANG_S", "1e3"},
           {"NCCLWATCH_TEST_CLOCK_OFFSET_NS", "5s"},
           {"NCCLWATCH_TEST_DRAIN_HOLD", "perhaps"},
           {"NCCLWATCH_MODE", "fast"},
           {"NCCLWATCH_KERNELS", "sampled:0"},
           {"NCCLWATCH_CUPTI_CLOCK", "gps"},
           {"NCCLWATCH_CUPTI_BUFFERS", "65"},
           {"NCCLWATCH_CUPTI_BUFFER_KB", "63"},
           {"NCCLWATCH_NVTX", "sometimes"}};
  Settings s = read_settings(&fake_env);
  EXPECT_EQ(s.problems.size(), g_env.size()) << problems_of(s);
  const std::string err = problems_of(s);
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_RING_MB=lots (expected 0.004..1048576), using 16\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_DRAIN_MS=-3 (expected 1..10000), using 2\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH=maybe (expected on|off), using on\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_HANG_S=1e3"), std::string::npos) << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_TEST_CLOCK_OFFSET_NS=5s"), std::string::npos) << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_MODE=fast (expected full|lite|host), using full\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_KERNELS=sampled:0"), std::string::npos) << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_CUPTI_CLOCK=gps"), std::string::npos) << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_CUPTI_BUFFERS=65 (expected 2..64), using 16\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_CUPTI_BUFFER_KB=63"), std::string::npos) << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_NVTX=sometimes"), std::string::npos) << err;
  EXPECT_NE(err.find("ncclwatch: bad NCCLWATCH_TEST_DRAIN_HOLD=perhaps"), std::string::npos) << err;
  EXPECT_EQ(s.ring_mb, kDefaultRingMb);
  EXPECT_EQ(s.drain_ms, 2);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.hang_s, 0);
  EXPECT_EQ(s.test_clock_offset_ns, 0);
  EXPECT_FALSE(s.test_drain_hold);
  EXPECT_EQ(s.mode, GpuMode::kFull);
  EXPECT_EQ(s.kernels, KernelPolicy::kAll);
  EXPECT_EQ(s.cupti_clock, CuptiClockChoice::kAuto);
  EXPECT_EQ(s.cupti_buffers, 16u);
  EXPECT_EQ(s.cupti_buffer_kb, 4096u);
  EXPECT_TRUE(s.nvtx);
  // A long value is cut in the message.
  g_env = {{"NCCLWATCH_MODE", std::string(1000, 'x')}};
  s = read_settings(&fake_env);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_LT(s.problems[0].size(), 250u);
}

// The snapshot: taken once, its problems printed once (at the first NCCL call), and a change
// made to the environment after it was taken is said, not used.
TEST(Settings, SnapshotReportsProblemsOnceAndChangesAfterLoad) {
  g_env = {{"NCCLWATCH_DIR", "/a"}, {"NCCLWATCH_DRAIN_MS", "zero"}};
  load_settings(&fake_env);
  EXPECT_EQ(settings().dir, "/a");
  g_env["NCCLWATCH_DIR"] = "/b";
  g_env["NCCLWATCH_MODE"] = "lite";
  EXPECT_EQ(settings().dir, "/a");
  ::testing::internal::CaptureStderr();
  report_settings_problems();
  report_settings_problems();  // once
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "ncclwatch: bad NCCLWATCH_DRAIN_MS=zero (expected 1..10000), using 2\n"
            "ncclwatch: NCCLWATCH_DIR changed after start-up (now '/b', was '/a'); the shim "
            "keeps the value it read when it was loaded\n"
            "ncclwatch: NCCLWATCH_MODE changed after start-up (now 'lite', was unset); the shim "
            "keeps the value it read when it was loaded\n");
  EXPECT_EQ(settings().mode, GpuMode::kFull);
  // A new snapshot (tests only) is reported again.
  load_settings(&fake_env);
  EXPECT_EQ(settings().dir, "/b");
  ::testing::internal::CaptureStderr();
  report_settings_problems();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "ncclwatch: bad NCCLWATCH_DRAIN_MS=zero (expected 1..10000), using 2\n");
  load_settings(&process_env);
}

}  // namespace
}  // namespace ncclwatch::shim

namespace ncclwatch::shim {
namespace {

std::string tier_problems(const Settings& s) {
  std::string text;
  for (const std::string& line : s.problems) text += line + "\n";
  return text;
}

// The tiers' settings (docs/always-on.md): defaults, every form of the schedule, and a bad value
// of each as one line and the default.
TEST(Settings, DetailAndCaptureSchedule) {
  g_env = {};
  Settings s = read_settings(&fake_env);
  EXPECT_EQ(s.detail, DetailLevel::kWindows);
  ASSERT_EQ(s.capture.size(), 1u);
  EXPECT_EQ(s.capture[0].kind, CaptureItem::Kind::kFirst);
  EXPECT_EQ(s.capture[0].a, 50u);
  EXPECT_EQ(settings::variable(settings::Id::kCapture).default_text, "first:50");
  EXPECT_EQ(s.max_mb, 256u);
  EXPECT_EQ(settings::variable(settings::Id::kMaxMb).default_text, "256");

  g_env = {{"NCCLWATCH_DETAIL", "all"},
           {"NCCLWATCH_CAPTURE", "first:10,steps:100-150,every:30m:20,every:2h:15"}};
  s = read_settings(&fake_env);
  EXPECT_TRUE(s.problems.empty()) << tier_problems(s);
  EXPECT_EQ(s.detail, DetailLevel::kAll);
  ASSERT_EQ(s.capture.size(), 4u);
  EXPECT_EQ(s.capture[0].a, 10u);
  EXPECT_EQ(s.capture[1].kind, CaptureItem::Kind::kSteps);
  EXPECT_EQ(s.capture[1].a, 100u);
  EXPECT_EQ(s.capture[1].b, 150u);
  EXPECT_EQ(s.capture[2].kind, CaptureItem::Kind::kEvery);
  EXPECT_EQ(s.capture[2].period_ns, 30LL * 60 * 1'000'000'000);
  EXPECT_EQ(s.capture[2].a, 20u);
  EXPECT_EQ(s.capture[3].period_ns, 2LL * 3600 * 1'000'000'000);
  EXPECT_EQ(s.capture[3].a, 15u);

  g_env = {{"NCCLWATCH_CAPTURE", "off"}, {"NCCLWATCH_DETAIL", "windows"}};
  s = read_settings(&fake_env);
  EXPECT_TRUE(s.problems.empty()) << tier_problems(s);
  EXPECT_TRUE(s.capture.empty());

  for (const char* bad : {"first:0", "steps:9-3", "steps:5", "every:0s:5", "every:5s:5",
                          "every:30m", "every:30x:5", "first:10,sometimes", "off,first:3", ","}) {
    g_env = {{"NCCLWATCH_CAPTURE", bad}};
    s = read_settings(&fake_env);
    ASSERT_EQ(s.problems.size(), 1u) << bad;
    EXPECT_NE(s.problems[0].find("bad NCCLWATCH_CAPTURE="), std::string::npos) << s.problems[0];
    EXPECT_NE(s.problems[0].find("using first:50"), std::string::npos) << s.problems[0];
    ASSERT_EQ(s.capture.size(), 1u) << bad;
    EXPECT_EQ(s.capture[0].a, 50u);
  }
  g_env = {{"NCCLWATCH_MAX_MB", "4"}};
  EXPECT_EQ(read_settings(&fake_env).max_mb, 4u);
  g_env = {{"NCCLWATCH_DETAIL", "some"}, {"NCCLWATCH_MAX_MB", "0"}};
  s = read_settings(&fake_env);
  ASSERT_EQ(s.problems.size(), 2u) << tier_problems(s);
  EXPECT_EQ(s.max_mb, 256u);
  EXPECT_NE(s.problems[0].find("bad NCCLWATCH_DETAIL=some"), std::string::npos);
  EXPECT_EQ(s.detail, DetailLevel::kWindows);
}

// NCCLWATCH_SUMMARY_GPU (shim/record/gpu_switch.h): auto by default, on, off; a bad value is one
// line and auto.
TEST(Settings, SummaryGpu) {
  g_env = {};
  EXPECT_EQ(read_settings(&fake_env).summary_gpu, SummaryGpu::kAuto);
  EXPECT_EQ(settings::variable(settings::Id::kSummaryGpu).default_text, "auto");
  g_env = {{"NCCLWATCH_SUMMARY_GPU", "on"}};
  EXPECT_EQ(read_settings(&fake_env).summary_gpu, SummaryGpu::kOn);
  g_env = {{"NCCLWATCH_SUMMARY_GPU", "off"}};
  EXPECT_EQ(read_settings(&fake_env).summary_gpu, SummaryGpu::kOff);
  g_env = {{"NCCLWATCH_SUMMARY_GPU", "sometimes"}};
  Settings s = read_settings(&fake_env);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_NE(s.problems[0].find("bad NCCLWATCH_SUMMARY_GPU=sometimes"), std::string::npos);
  EXPECT_EQ(s.summary_gpu, SummaryGpu::kAuto);
}

// NCCLWATCH_AUTO_CAPTURE: the default 20:30m:10, off, a value of each field, and each bad value
// as one line and the default.
TEST(Settings, AutoCapture) {
  g_env = {};
  Settings s = read_settings(&fake_env);
  EXPECT_TRUE(s.auto_capture.on);
  EXPECT_EQ(s.auto_capture.steps, 20u);
  EXPECT_EQ(s.auto_capture.cooldown_ns, 30LL * 60 * 1'000'000'000);
  EXPECT_EQ(s.auto_capture.per_day, 10u);
  EXPECT_EQ(settings::variable(settings::Id::kAutoCapture).default_text, "20:30m:10");

  g_env = {{"NCCLWATCH_AUTO_CAPTURE", "off"}};
  s = read_settings(&fake_env);
  EXPECT_TRUE(s.problems.empty()) << tier_problems(s);
  EXPECT_FALSE(s.auto_capture.on);

  g_env = {{"NCCLWATCH_AUTO_CAPTURE", "50:2h:3"}};
  s = read_settings(&fake_env);
  EXPECT_TRUE(s.problems.empty()) << tier_problems(s);
  EXPECT_TRUE(s.auto_capture.on);
  EXPECT_EQ(s.auto_capture.steps, 50u);
  EXPECT_EQ(s.auto_capture.cooldown_ns, 2LL * 3600 * 1'000'000'000);
  EXPECT_EQ(s.auto_capture.per_day, 3u);

  for (const char* bad : {"0:30m:10", "20:5s:10", "20:30m:0", "20:30m", "20:30x:10", "on",
                          "20:30m:10:1", "-1:30m:10", "20:30m:1001", "100001:30m:1", ":::"}) {
    g_env = {{"NCCLWATCH_AUTO_CAPTURE", bad}};
    s = read_settings(&fake_env);
    ASSERT_EQ(s.problems.size(), 1u) << bad;
    EXPECT_NE(s.problems[0].find("bad NCCLWATCH_AUTO_CAPTURE="), std::string::npos)
        << s.problems[0];
    EXPECT_NE(s.problems[0].find("using 20:30m:10"), std::string::npos) << s.problems[0];
    EXPECT_EQ(s.auto_capture, AutoCapture{}) << bad;
  }
}

}  // namespace
}  // namespace ncclwatch::shim

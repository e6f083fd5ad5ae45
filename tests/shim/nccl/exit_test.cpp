// The shim at process exit and with functions the real NCCL lacks (issue 10 item 6): exit does
// not wait for the drain period, NCCL calls from atexit handlers are recorded (or, after the
// shim's exit flush, reported), a ring too large for /dev/shm falls back to the default size, and
// a hooked function missing from the real NCCL answers ncclInternalError with one line.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "../support/trace_file.h"
#include "process.h"

namespace ncclwatch::testing {

using test_support::run_process;
namespace {

using format::RecordKind;

std::vector<std::string> traces_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 6 && n.compare(n.size() - 6, 6, ".trace") == 0) out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  return out;
}

// Lines of `out` that start with "ncclwatch:" and contain `needle`.
int shim_lines(const std::string& out, const std::string& needle) {
  std::istringstream in(out);
  int n = 0;
  for (std::string line; std::getline(in, line);)
    n += line.rfind("ncclwatch:", 0) == 0 && line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

class ExitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    job_ = "exit" + std::to_string(getpid()) + "-" + name;
    dir_ = "/tmp/ncclwatch-exit-" + job_;
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  void TearDown() override {
    std::system(("rm -rf '" + dir_ + "'").c_str());
    std::system(("rm -f /dev/shm/ncclwatch." + job_ + ".*").c_str());
  }

  int run(std::vector<std::string> argv, std::vector<std::string> env, std::string* out,
          std::string preload = NCCLWATCH_SHIM_LIB) {
    std::string asan = "ASAN_OPTIONS=verify_asan_link_order=0";
    if (const char* a = std::getenv("ASAN_OPTIONS")) asan += std::string(":") + a;
    std::vector<std::string> all = {"LD_PRELOAD=" + preload, asan,
                                    "NCCLWATCH_DIR=" + dir_, "NCCLWATCH_JOB=" + job_,
                                    "NCCLWATCH_HOST=h",      "NCCLWATCH_MODE=host",
                                    "FAKE_NCCL_TIMEOUT_S=20"};
    all.insert(all.end(), env.begin(), env.end());
    return run_process(argv, all, out);
  }

  TraceFile only_trace() {
    auto paths = traces_in(dir_);
    EXPECT_EQ(paths.size(), 1u);
    return paths.empty() ? TraceFile{} : TraceFile::read(paths[0]);
  }

  std::string job_, dir_;
};

double seconds_to_run(const std::function<int()>& f, int* rc) {
  auto start = std::chrono::steady_clock::now();
  *rc = f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// NCCLWATCH_DRAIN_MS=10000 used to hold exit for up to 10 s (the drain thread's sleep). Compared
// with the same program at the default period, so a slow host only makes both slower; the margin
// (5 s) is half the period, far above any start-up cost.
TEST_F(ExitTest, ExitDoesNotWaitForTheDrainPeriod) {
  std::string out;
  int rc = 0;
  double normal = seconds_to_run([&] { return run({EXIT_PROBE, "quick"}, {}, &out); }, &rc);
  ASSERT_EQ(rc, 0) << out;
  std::system(("rm -rf '" + dir_ + "'").c_str());
  double slow = seconds_to_run(
      [&] {
        return run({EXIT_PROBE, "quick"}, {"NCCLWATCH_DRAIN_MS=10000"}, &out);
      },
      &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_LT(slow, normal + 5.0) << "exit waited for the drain period";
  TraceFile t = only_trace();
  ASSERT_TRUE(t.ok);
  EXPECT_EQ(t.header.state, format::kTraceStateClosed);
  EXPECT_EQ(t.count(RecordKind::kUniqueId), 1u);  // drained at exit although the period never ended
}

TEST_F(ExitTest, NcclCallsInAnAtexitHandlerAreRecorded) {
  std::string out;
  ASSERT_EQ(run({EXIT_PROBE, "atexit"}, {}, &out), 0) << out;
  EXPECT_NE(out.find("atexit handler: 0 0 0"), std::string::npos) << out;
  TraceFile t = only_trace();
  ASSERT_TRUE(t.ok);
  EXPECT_EQ(t.header.state, format::kTraceStateClosed);
  EXPECT_EQ(t.count(RecordKind::kUniqueId), 2u) << "main's call and the handler's";
  EXPECT_EQ(t.count(RecordKind::kComm), 1u);
  EXPECT_GE(t.count(RecordKind::kCommEnd), 1u);
  EXPECT_EQ(shim_lines(out, "after the trace was closed"), 0) << out;
}

// A handler registered before the shim's (by a library initialised first: glibc initialises the
// later of two independent preloaded libraries first) runs after the exit flush: its call passes
// through untouched and is reported once, not silently lost.
TEST_F(ExitTest, ACallAfterTheExitFlushPassesThroughAndIsReported) {
  std::string out;
  ASSERT_EQ(
      run({EXIT_PROBE, "quick"}, {}, &out, std::string(NCCLWATCH_SHIM_LIB) + ":" + EXIT_CALLER_LIB),
      0)
      << out;
  EXPECT_NE(out.find("late call: 0"), std::string::npos) << out;
  TraceFile t = only_trace();
  ASSERT_TRUE(t.ok);
  EXPECT_EQ(t.header.state, format::kTraceStateClosed);
  if (t.count(RecordKind::kUniqueId) == 2u) {
    // This loader initialised the library after the shim: its handler ran first and was recorded.
    EXPECT_EQ(shim_lines(out, "after the trace was closed"), 0) << out;
  } else {
    EXPECT_EQ(t.count(RecordKind::kUniqueId), 1u);
    EXPECT_EQ(shim_lines(out, "after the trace was closed"), 1) << out;
  }
}

TEST_F(ExitTest, RingTooLargeForDevShmFallsBackToTheDefaultSize) {
  std::string out;
  // 1 TiB: more than any /dev/shm holds (tmpfs refuses such a posix_fallocate at once).
  ASSERT_EQ(run({EXIT_PROBE, "quick"}, {"NCCLWATCH_RING_MB=1048576"}, &out), 0) << out;
  EXPECT_EQ(shim_lines(out, "using the default 16 MiB ring"), 1) << out;
  EXPECT_EQ(shim_lines(out, "recording off"), 0) << out;
  TraceFile t = only_trace();
  ASSERT_TRUE(t.ok);
  EXPECT_EQ(t.count(RecordKind::kUniqueId), 1u);
}

// Documented in shim/README.md: a client that looks a newer function up by name finds the shim's
// wrapper even when the real NCCL lacks it (ncclCommShrink before 2.28).
TEST_F(ExitTest, HookedFunctionMissingFromTheRealNcclAnswersInternalErrorWithOneLine) {
  std::string out;
  ASSERT_EQ(run({MISSING_FUNCTION_PROBE}, {}, &out), 0) << out;
  EXPECT_NE(out.find("found 3 3"), std::string::npos) << out;  // ncclInternalError, twice
  EXPECT_EQ(shim_lines(out, ""), 1) << out;                    // one line for both calls
  EXPECT_EQ(shim_lines(out, "ncclCommShrink"), 1) << out;
  struct stat st {};
  EXPECT_NE(stat(dir_.c_str(), &st), 0) << "nothing recorded, nothing created";
}

}  // namespace
}  // namespace ncclwatch::testing

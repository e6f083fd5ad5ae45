// Which ranks `status --stacks` and `run`'s watchdog take the Python stack of (live/stack_taker.h,
// live/stack_watch.h), and running py-spy (live/py_spy.h) at its seam: a stand-in `py-spy`
// script that prints a canned dump, fails like py-spy does without ptrace rights, or never
// answers. The real py-spy on a real Python process: tests/e2e/stacks_test.cpp.
#include "live/stack_taker.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "live/py_spy.h"
#include "live/stack_watch.h"
#include "process.h"
#include "trace/stack_file.h"

namespace ncclwatch::live {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
constexpr uint64_t kComm = 0xab;
constexpr int64_t kSecond = 1'000'000'000;

// Ranks 0-2 wait in all_reduce #4 on kComm; rank 3 (live, pid 1003) entered #3 only.
JobStatus hung_job() {
  JobStatus st;
  st.job = "j";
  for (int r = 0; r < 4; ++r) {
    RankStatus rs;
    rs.rank = r;
    rs.host = "node1";
    rs.pid = 1000 + r;
    rs.live = true;
    rs.trace_path = "/traces/ncclwatch.node1." + std::to_string(1000 + r) + ".trace";
    rs.comms[kComm].entered = r == 3 ? 3 : 4;
    rs.last_func = format::Func::kAllReduce;
    if (r != 3)
      rs.open_calls.push_back({format::Func::kAllReduce, kComm, 4, true, 0, 9 * kSecond, 1});
    if (r == 3) rs.idle_ns = 2 * kSecond;
    st.ranks.push_back(rs);
  }
  CommStatus c;
  c.id = kComm;
  c.nranks = 4;
  c.max_entered = 4;
  c.max_func = format::Func::kAllReduce;
  c.waiting = {0, 1, 2};
  c.behind = {3};
  st.comms.push_back(c);
  return st;
}

TEST(StackTargets, TheRankBehindOnlyWithItsReason) {
  const auto t = stack_targets(hung_job(), seconds(5));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rank, 3);
  EXPECT_EQ(t[0].pid, 1003);
  EXPECT_EQ(t[0].trace_dir, "/traces");
  EXPECT_EQ(t[0].why,
            "never entered all_reduce #4 on comm 0x00000000000000ab (entered #3); ranks 0-2 "
            "waiting in it");
  EXPECT_EQ(t[0].hold, "comm 0x00000000000000ab #4");
}

TEST(StackTargets, ATracePathNotNamedLikeTheRanksTraceGivesNoDirectory) {
  JobStatus st = hung_job();
  for (const char* path : {"/etc/passwd", "relative/ncclwatch.node1.1003.trace",
                           "/traces/ncclwatch.node1.1004.trace", ""}) {
    st.ranks[3].trace_path = path;
    const auto t = stack_targets(st, seconds(5));
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].trace_dir, "") << path;
  }
}

TEST(StackTargets, OnlyLiveRanksOfThisNode) {
  JobStatus st = hung_job();
  st.ranks[3].live = false;  // dead, or on another node (seen through the shared trace dir)
  EXPECT_TRUE(stack_targets(st, seconds(5)).empty());
}

TEST(StackTargets, AHostStallCountsAfterItsTime) {
  JobStatus st = hung_job();
  st.comms.clear();  // the peers are on other nodes: nobody seen waiting here
  EXPECT_TRUE(stack_targets(st, seconds(5)).empty());
  st.ranks[3].idle_ns = 6 * kSecond;
  st.ranks[3].last_return_ns = 77;
  const auto t = stack_targets(st, seconds(5));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].why, "no NCCL call for 6.0 s (stalled on the host)");
  EXPECT_EQ(t[0].hold, "idle since 77");
}

TEST(StackTargets, ARankThatNeverCalledWhileOthersWaitInInit) {
  JobStatus st = hung_job();
  st.comms[0].behind.clear();
  st.comms[0].in_init = {0, 1, 2};
  st.ranks[3].last_func = format::Func::kUnknown;
  st.ranks[3].idle_ns = -1;
  const auto t = stack_targets(st, seconds(5));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rank, 3);
  EXPECT_EQ(t[0].hold, "init");
}

TEST(StackWatch, OncePerHangAfterTheWatchdogsTime) {
  StackWatch watch(seconds(10));
  JobStatus st = hung_job();
  EXPECT_TRUE(watch.due(st, 100 * kSecond).empty());  // first seen
  EXPECT_TRUE(watch.due(st, 105 * kSecond).empty());
  auto due = watch.due(st, 110 * kSecond);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].rank, 3);
  EXPECT_TRUE(watch.due(st, 200 * kSecond).empty());  // taken: not again for this hang
  // The job moves on, then hangs again one collective later: a new hang, taken again.
  st.comms[0].max_entered = 5;
  EXPECT_TRUE(watch.due(st, 201 * kSecond).empty());
  EXPECT_EQ(watch.due(st, 211 * kSecond).size(), 1u);
}

TEST(StackWatch, AProgressingJobIsNeverDue) {
  StackWatch watch(seconds(10));
  JobStatus st = hung_job();
  for (int64_t i = 0; i < 100; ++i) {
    st.comms[0].max_entered = 4 + i;  // someone is always one behind, but the comm moves on
    EXPECT_TRUE(watch.due(st, (100 + i) * kSecond).empty()) << i;
  }
}

class PySpy : public ::testing::Test {
 protected:
  // A `py-spy` in bin/ that runs `body` (a shell script).
  std::string fake(const std::string& body) {
    fs::create_directories(bin_);
    const fs::path p = bin_ / "py-spy";
    std::ofstream(p) << "#!/bin/sh\n" << body;
    ::chmod(p.c_str(), 0755);
    return p.string();
  }
  test_support::TempDir tmp_{"ncclwatch_py_spy"};
  fs::path bin_ = tmp_.path() / "bin";
};

TEST_F(PySpy, FoundOnPathOnlyWhenExecutable) {
  EXPECT_EQ(find_py_spy("/nonexistent:" + tmp_.path().string()), "");
  const std::string p = fake("exit 0\n");
  EXPECT_EQ(find_py_spy("/nonexistent::" + bin_.string()), p);
  ::chmod(p.c_str(), 0644);
  EXPECT_EQ(find_py_spy(bin_.string()), "");
  EXPECT_NE(py_spy_hint().find("`pip install py-spy`"), std::string::npos);
}

TEST_F(PySpy, ItsDumpWithoutThePreload) {
  const std::string p = fake(
      "echo \"args: $*\" >&2\n"
      "echo \"preload: [$LD_PRELOAD]\" > \"$(dirname \"$0\")/env.txt\"\n"
      "printf 'Thread %s (idle): \"MainThread\"\\n    load (/srv/job/train.py:3)\\n' \"$3\"\n");
  ::setenv("LD_PRELOAD", "/nonexistent/libncclwatch.so", 1);
  const PySpyResult r = run_py_spy(p, 4242, seconds(30));
  ::unsetenv("LD_PRELOAD");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.dump, "Thread 4242 (idle): \"MainThread\"\n    load (/srv/job/train.py:3)\n");
  EXPECT_EQ(test_support::slurp(bin_ / "env.txt"), "preload: []\n");
}

TEST_F(PySpy, AFailureIsOneLineAndSaysWhatPermissionItNeeds) {
  const std::string p = fake(
      "echo 'Error: Operation not permitted (os error 1)' >&2\n"
      "echo 'second line' >&2\nexit 1\n");
  const PySpyResult r = run_py_spy(p, 1, seconds(30));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.find("py-spy failed: Error: Operation not permitted (os error 1)"), 0u)
      << r.error;
  EXPECT_NE(r.error.find("CAP_SYS_PTRACE"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find('\n'), std::string::npos);
}

TEST_F(PySpy, OneThatNeverAnswersIsKilled) {
  const std::string p = fake("exec sleep 600\n");
  const auto start = std::chrono::steady_clock::now();
  const PySpyResult r = run_py_spy(p, 1, std::chrono::milliseconds(500));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("did not answer"), std::string::npos) << r.error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(120));  // not the 600 s
}

TEST_F(PySpy, TakenStacksAreSavedAndSaidInOneLine) {
  const std::string p = fake(
      "printf 'Thread 1 (idle): \"MainThread\"\\n    get (/usr/lib/python3.11/queue.py:171)\\n"
      "    load_batch (/srv/job/stuck.py:52)\\n'\n");
  StackTarget t{3, "node1", 1003, "never entered all_reduce #4", "", "comm #4"};
  TakeOptions o;
  o.py_spy = p;
  o.job = "j";
  o.dir = tmp_.path().string();
  const TakenStack taken = take_stack(t, o);
  ASSERT_TRUE(taken.ok) << taken.error;
  EXPECT_EQ(taken.where.where, "stuck.py:load_batch");
  const std::string file = (tmp_.path() / "ncclwatch.node1.1003.stack.txt").string();
  EXPECT_EQ(taken.saved, file);
  EXPECT_EQ(render_taken(taken),
            "rank 3 stuck in stuck.py:load_batch — never entered all_reduce "
            "#4; stack saved to " +
                file);
  const trace::SavedStack s = trace::read_stack_file(tmp_.path().string(), "node1", 1003, "j");
  ASSERT_TRUE(s.usable) << s.note;
  EXPECT_EQ(s.header.rank, 3);
  EXPECT_EQ(s.header.why, "never entered all_reduce #4");
  // No directory known: said, not guessed.
  o.dir.clear();
  const TakenStack unsaved = take_stack(t, o);
  EXPECT_NE(render_taken(unsaved).find("; stack not saved: no trace directory known"),
            std::string::npos)
      << render_taken(unsaved);
  // Not a Python process.
  o.py_spy = fake("echo 'Error: Failed to find python version from target process' >&2; exit 1\n");
  EXPECT_EQ(render_taken(take_stack(t, o)),
            "rank 3 (pid 1003): no Python stack: py-spy failed: Error: Failed to find python "
            "version from target process");
}

}  // namespace
}  // namespace ncclwatch::live

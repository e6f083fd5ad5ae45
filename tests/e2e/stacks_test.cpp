// Where a stuck rank is, end to end (docs/always-on.md, "Where a stuck rank is"): `ncclwatch run`
// on a 4-rank fake job whose rank 3 is a real Python process (tests/e2e/stuck_rank.py) stuck in
// load_batch() -- waiting on a queue, as a data loader whose worker died -- while ranks 0-2 wait
// in the next all-reduce. With py-spy: run's watchdog (NCCLWATCH_HANG_S) takes rank 3's stack
// once and names the function, `ncclwatch status --stacks` does the same on demand, the stack is
// saved next to the traces and the report's hang verdict names it. Without py-spy: one line says
// how to get it, from both. py-spy comes from NCCLWATCH_TEST_PY_SPY (a path, at run time), the
// CMake cache variable NCCLWATCH_PY_SPY, build/pyspy-venv (scripts/test.sh installs it from PyPI,
// best effort) or PATH; without one the py-spy test is skipped and says why. py-spy needs ptrace
// rights over the ranks (root, as on CI; else docs/always-on.md says what).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "process.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::test_support::CommandResult;
using ncclwatch::test_support::slurp;
using nlohmann::json;

constexpr auto kDeadline = std::chrono::seconds(150);
const std::string kNoPath = "/nonexistent-ncclwatch-test-path";

bool executable(const fs::path& p) {
  return !p.empty() && ::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p);
}

// The directory of the py-spy to use, "" if there is none.
std::string py_spy_dir() {
  std::vector<fs::path> candidates;
  if (const char* v = std::getenv("NCCLWATCH_TEST_PY_SPY"); v != nullptr && *v != '\0')
    candidates.emplace_back(v);
  candidates.emplace_back(NCCLWATCH_PY_SPY);
  candidates.emplace_back(fs::path(PYSPY_VENV) / "bin" / "py-spy");
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  for (std::size_t at = 0; at <= dirs.size();) {
    const std::size_t colon = std::min(dirs.find(':', at), dirs.size());
    if (colon > at) candidates.push_back(fs::path(dirs.substr(at, colon - at)) / "py-spy");
    at = colon + 1;
  }
  for (const auto& c : candidates)
    if (executable(c)) return fs::absolute(c).parent_path().string();
  return "";
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class Stacks : public ::testing::Test {
 protected:
  void SetUp() override {
    // The interpreter itself (python3 on PATH may be a wrapper script needing a full PATH): the
    // job runs with a PATH that holds py-spy or nothing.
    const CommandResult py = run("python3 -c 'import sys; print(sys.executable)'");
    python_ = py.out.substr(0, py.out.find('\n'));
    if (py.rc != 0 || !executable(python_)) GTEST_SKIP() << "python3 not found: " << py.err;
    dir_ = tmp_.path() / "traces";
    job_ = "stacks-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    job_ = job_.substr(0, 60);
  }
  void TearDown() override { stop_run(); }

  CommandResult run(const std::string& cmd) {
    return ncclwatch::test_support::run_shell(cmd, tmp_.path());
  }

  // `ncclwatch run --dir D --job J --json R -- fake_launcher --nproc 4 -- python3 stuck_rank.py`
  // in the background with PATH = `path` and the watchdog at 2 s.
  void start_run(const std::string& path) {
    const std::string log = (tmp_.path() / "run.log").string();
    std::vector<std::string> argv = {NCCLWATCH_CLI,
                                     "run",
                                     "--no-progress",
                                     "--dir",
                                     dir_.string(),
                                     "--job",
                                     job_,
                                     "--json",
                                     (tmp_.path() / "report.json").string(),
                                     "--",
                                     FAKE_LAUNCHER,
                                     "--nproc",
                                     "4",
                                     "--env",
                                     std::string("FAKE_RANK=") + FAKE_RANK,
                                     "--env",
                                     std::string("FAKE_NCCL_LIB=") + FAKE_NCCL,
                                     "--env",
                                     "FAKE_NCCL_TIMEOUT_S=3600",
                                     "--",
                                     python_,
                                     STUCK_RANK_PY,
                                     "--steps",
                                     "5",
                                     "--colls",
                                     "2"};
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::fflush(nullptr);
    run_ = fork();
    ASSERT_GE(run_, 0);
    if (run_ == 0) {
      if (!freopen(log.c_str(), "w", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(90);
      setenv("PATH", path.c_str(), 1);
      setenv("NCCLWATCH_LIB", SHIM_LIBRARY, 1);
      setenv("NCCLWATCH_HANG_S", "2", 1);
      unsetenv("LD_PRELOAD");
      execv(cargv[0], cargv.data());
      _exit(91);
    }
  }

  // SIGTERM to `run` (it passes it on to the job and reports), then its exit.
  void stop_run() {
    if (run_ <= 0) return;
    kill(run_, SIGTERM);
    for (int i = 0; i < 1200; ++i) {
      if (waitpid(run_, nullptr, WNOHANG) == run_) {
        run_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(run_, SIGKILL);
    waitpid(run_, nullptr, 0);
    run_ = -1;
  }

  std::string log() { return slurp(tmp_.path() / "run.log"); }

  bool wait_for_log(const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (log().find(what) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  // `ncclwatch status --stacks` with PATH = `path`.
  CommandResult status_stacks(const std::string& path) {
    return run("PATH=" + path + " " + NCCLWATCH_CLI + " status --job " + job_ + " --dir " +
               dir_.string() + " --stacks");
  }

  ncclwatch::test_support::TempDir tmp_{"ncclwatch_stacks"};
  fs::path dir_;
  std::string job_, python_;
  pid_t run_ = -1;
};

TEST_F(Stacks, AHangNamesTheStuckRanksPythonFunction) {
  const std::string py_spy = py_spy_dir();
  if (py_spy.empty())
    GTEST_SKIP() << "py-spy not found (NCCLWATCH_TEST_PY_SPY, NCCLWATCH_PY_SPY='"
                 << NCCLWATCH_PY_SPY << "', " << PYSPY_VENV
                 << "/bin/py-spy or PATH; scripts/test.sh installs it from PyPI when it can)";
  // py-spy itself must work here (ptrace rights, a Python version it knows): tried on a plain
  // sleeping interpreter first, so that a machine where it cannot is a skip that says why.
  const CommandResult probe =
      run("'" + python_ +
          "' -c 'import time; time.sleep(60)' & p=$!; rc=1; for i in 1 2 3 4 5 6 7 8; "
          "do sleep 1; '" +
          py_spy +
          "/py-spy' dump --pid $p >/dev/null && { rc=0; break; }; done; "
          "kill $p; exit $rc");
  if (probe.rc != 0)
    GTEST_SKIP() << "py-spy (" << py_spy << ") cannot dump a Python process here (it needs "
                 << "ptrace rights: root, CAP_SYS_PTRACE, or kernel.yama.ptrace_scope 0): "
                 << probe.err;
  start_run(py_spy + ":" + kNoPath);
  const std::string named = "rank 3 stuck in stuck_rank.py:load_batch";
  // run's watchdog, once rank 3 has held all_reduce #4 up for 2 s.
  ASSERT_TRUE(wait_for_log("ncclwatch: hang: rank 3 ")) << log();
  std::string text = log();
  ASSERT_NE(text.find("ncclwatch: hang: " + named + " — never entered all_reduce #4 on comm 0x"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("; ranks 0-2 waiting in it; stack saved to " + dir_.string() + "/ncclwatch."),
            std::string::npos)
      << text;
  // The shim's own watchdog line points at the same command (and never runs anything itself).
  EXPECT_NE(text.find("`ncclwatch status --stacks` shows every rank"), std::string::npos) << text;
  // `ncclwatch status --stacks` while it hangs says the same.
  const CommandResult st = status_stacks(py_spy + ":" + kNoPath);
  EXPECT_EQ(st.rc, 0) << st.err;
  EXPECT_NE(st.out.find("=> rank 3 never entered all_reduce #4"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("  " + named + " — never entered all_reduce #4"), std::string::npos)
      << st.out << st.err;
  // Once per hang: the watchdog has looked many times since, and said it once.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  EXPECT_EQ(count_of(log(), "ncclwatch: hang: "), 1u) << log();
  int stack_files = 0;
  for (const auto& e : fs::directory_iterator(dir_))
    stack_files += e.path().filename().string().ends_with(".stack.txt") ? 1 : 0;
  EXPECT_EQ(stack_files, 1);

  stop_run();
  // The report of the killed job: the hang verdict names where rank 3 is.
  const json j = json::parse(slurp(tmp_.path() / "report.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << log();
  ASSERT_TRUE(j["hang"].is_object()) << j.dump();
  EXPECT_NE(j["hang"]["text"].get<std::string>().find(named + " (py-spy at "), std::string::npos)
      << j["hang"].dump();
  ASSERT_EQ(j["hang"]["last_call_of_missing"].size(), 1u) << j["hang"].dump();
  const json& m = j["hang"]["last_call_of_missing"][0];
  EXPECT_EQ(m["rank"], 3);
  EXPECT_EQ(m["python"]["where"], "stuck_rank.py:load_batch") << m.dump();
  EXPECT_EQ(m["python"]["thread"], "MainThread") << m.dump();
  EXPECT_NE(log().find("CRITICAL [hang] job hung in all_reduce #4"), std::string::npos) << log();
}

TEST_F(Stacks, WithoutPySpyOneLineSaysHowToGetIt) {
  start_run(kNoPath);
  // run's watchdog: the hint once the hang is seen, instead of a stack.
  ASSERT_TRUE(
      wait_for_log("ncclwatch: hang: Python stacks need py-spy on PATH: "
                   "`pip install py-spy`"))
      << log();
  // status --stacks: the view, then the same one line on stderr.
  const CommandResult st = status_stacks(kNoPath);
  EXPECT_EQ(st.rc, 0) << st.err;
  EXPECT_NE(st.out.find("=> rank 3 never entered all_reduce #4"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("stuck in"), std::string::npos) << st.out;
  EXPECT_EQ(st.err,
            "ncclwatch: Python stacks need py-spy on PATH: `pip install py-spy` (and the "
            "right to trace the ranks: the same user with kernel.yama.ptrace_scope 0, or "
            "root / CAP_SYS_PTRACE)\n");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(count_of(log(), "ncclwatch: hang: "), 1u) << log();
  stop_run();
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_FALSE(e.path().filename().string().ends_with(".stack.txt")) << e.path();
  const json j = json::parse(slurp(tmp_.path() / "report.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << log();
  EXPECT_TRUE(j["hang"]["last_call_of_missing"][0]["python"].is_null()) << j["hang"].dump();
}

}  // namespace

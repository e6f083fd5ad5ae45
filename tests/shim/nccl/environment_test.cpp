// The shim and the process environment: every change is made by the load-time constructor
// (before main, single-threaded); nothing after, because a setenv while another thread runs
// getenv crashes that thread. Runs environment_probe (linked against the fake NCCL) with the
// shim preloaded.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "process.h"

namespace ncclwatch::testing {

using test_support::run_process;
namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

std::vector<std::string> entries(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

int count_entries(const std::string& dir, const std::string& prefix) {
  return static_cast<int>(entries(dir, prefix).size());
}

class EnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    job_ = "env" + std::to_string(getpid()) + "-" + name;
    dir_ = "/tmp/ncclwatch-env-" + job_;
    std::system(("rm -rf '" + dir_ + "'").c_str());
    // The probes inherit this environment: the host's own settings must not leak in.
    for (const char* v :
         {"NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_TOPO_DUMP_FILE",
          "NCCL_TOPO_DUMP_FILE_RANK", "NCCL_GRAPH_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE_RANK",
          "NCCLWATCH_SET_NCCL_ENV", "NCCLWATCH", "LOCAL_RANK", "RANK", "SLURM_LOCALID",
          "SLURM_PROCID", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK"})
      unsetenv(v);
  }
  void TearDown() override {
    std::system(("rm -rf '" + dir_ + "'").c_str());
    std::system(("rm -f /dev/shm/ncclwatch." + job_ + ".*").c_str());
  }

  // The probe with the shim preloaded. `env` entries override the defaults below.
  int probe(std::vector<std::string> args, std::vector<std::string> env, std::string* out) {
    std::string asan = "ASAN_OPTIONS=verify_asan_link_order=0";
    if (const char* a = std::getenv("ASAN_OPTIONS")) asan += std::string(":") + a;
    std::vector<std::string> all = {std::string("LD_PRELOAD=") + NCCLWATCH_SHIM_LIB,
                                    asan,
                                    "NCCLWATCH_DIR=" + dir_,
                                    "NCCLWATCH_JOB=" + job_,
                                    "NCCLWATCH_HOST=h",
                                    "NCCLWATCH_RING_MB=0.01",
                                    "FAKE_NCCL_TIMEOUT_S=20"};
    all.insert(all.end(), env.begin(), env.end());
    args.insert(args.begin(), ENVIRONMENT_PROBE);
    return run_process(args, all, out);
  }

  std::string job_, dir_;
};

bool has_line(const std::string& out, const std::string& line) {
  return out.find(line + "\n") != std::string::npos;
}

// Issue 10 item 1: 95 of 100 such runs died in getenv when the shim set NCCL's variables at the
// first NCCL call. Up to 1,000 processes, bounded in wall time for slow (sanitized, loaded) hosts.
TEST_F(EnvironmentTest, ThreadsReadingTheEnvironmentDuringTheFirstNcclCallNeverCrash) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
  int runs = 0;
  for (; runs < 1000 && std::chrono::steady_clock::now() < deadline; ++runs) {
    std::string out;
    int rc = probe({"race", "--threads", "3"}, {}, &out);
    ASSERT_EQ(rc, 0) << "run " << runs << ": " << out;
  }
  std::cout << runs << " runs, no crash\n";
  EXPECT_GE(runs, 1);
}

TEST_F(EnvironmentTest, FirstNcclCallLeavesTheEnvironmentAsItWas) {
  std::string out;
  ASSERT_EQ(probe({"unchanged"}, {}, &out), 0) << out;
  // ... because the constructor already set what NCCL needs to log into the trace dir.
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG=INFO")) << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG_FILE=" + dir_ + "/nccl-debug.%h.%p.log")) << out;
  EXPECT_EQ(count_entries(dir_, "ncclwatch.h."), 1) << "the recorder still records";
}

TEST_F(EnvironmentTest, LaunchersRanksAtLoadDecideTheTopologyDump) {
  std::string out;
  ASSERT_EQ(probe({"unchanged"}, {"LOCAL_RANK=0", "RANK=8"}, &out), 0) << out;
  EXPECT_TRUE(has_line(out, "NCCL_TOPO_DUMP_FILE_RANK=8")) << out;
  // Named like the process's trace, ncclwatch.<host>.<pid>.trace (NCCLWATCH_HOST=h here).
  const auto traces = entries(dir_, "ncclwatch.h.");
  ASSERT_EQ(traces.size(), 1u);
  const std::string host_pid = traces[0].substr(10, traces[0].size() - 10 - 6);  // "h.<pid>"
  EXPECT_TRUE(has_line(out, "NCCL_TOPO_DUMP_FILE=" + dir_ + "/nccl-topo." + host_pid + ".xml"))
      << out;
  EXPECT_TRUE(has_line(out, "NCCL_GRAPH_DUMP_FILE=" + dir_ + "/nccl-graph." + host_pid + ".xml"))
      << out;
  ASSERT_EQ(probe({"unchanged"}, {"SLURM_LOCALID=2", "SLURM_PROCID=10"}, &out), 0) << out;
  EXPECT_TRUE(has_line(out, "NCCL_TOPO_DUMP_FILE=<unset>")) << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG=INFO")) << out;
}

// A relative NCCLWATCH_DIR is taken from the start directory: the trace and NCCL's logs (whose
// path was fixed at load) stay together even if the program changes directory first.
TEST_F(EnvironmentTest, RelativeDirIsTakenFromTheStartDirectory) {
  std::string base = "/tmp/ncclwatch-env-base-" + job_;
  std::string elsewhere = base + "/elsewhere";
  ASSERT_EQ(std::system(("mkdir -p '" + elsewhere + "'").c_str()), 0);
  char old[4096];
  ASSERT_NE(getcwd(old, sizeof old), nullptr);
  ASSERT_EQ(chdir(base.c_str()), 0);
  std::string out;
  int rc = probe({"unchanged", "--chdir", elsewhere.c_str()}, {"NCCLWATCH_DIR=rel"}, &out);
  ASSERT_EQ(chdir(old), 0);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG_FILE=" + base + "/rel/nccl-debug.%h.%p.log")) << out;
  EXPECT_EQ(count_entries(base + "/rel", "ncclwatch.h."), 1);
  EXPECT_FALSE(exists(elsewhere + "/rel"));
  std::system(("rm -rf '" + base + "'").c_str());
}

// The torchrun launcher under LD_PRELOAD sets the variables for its own (other) trace dir; its
// workers inherit them with the marker and replace them. A user's own value is kept.
TEST_F(EnvironmentTest, AnAncestorsValuesAreReplacedTheUsersAreKept) {
  std::string out;
  std::string theirs = "/tmp/launcher-dir/nccl-debug.%h.%p.log";
  ASSERT_EQ(probe({"unchanged"},
                  {"NCCL_DEBUG=INFO", "NCCL_DEBUG_FILE=" + theirs, "NCCL_DEBUG_SUBSYS=INIT,GRAPH",
                   "NCCL_TOPO_DUMP_FILE=/tmp/launcher-dir/nccl-topo.h.xml", "LOCAL_RANK=1",
                   "NCCLWATCH_SET_NCCL_ENV=NCCL_DEBUG=INFO\nNCCL_DEBUG_FILE=" + theirs +
                       "\nNCCL_DEBUG_SUBSYS=INIT,GRAPH\nNCCL_TOPO_DUMP_FILE=/tmp/launcher-dir/"
                       "nccl-topo.h.xml\n"},
                  &out),
            0)
      << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG_FILE=" + dir_ + "/nccl-debug.%h.%p.log")) << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,NET")) << out;
  EXPECT_TRUE(has_line(out, "NCCL_TOPO_DUMP_FILE=<unset>")) << out;  // local rank 1 dumps none

  // Changed after the ancestor set it: the user's.
  ASSERT_EQ(probe({"unchanged"},
                  {"NCCL_DEBUG=WARN", "NCCL_DEBUG_FILE=" + theirs,
                   "NCCLWATCH_SET_NCCL_ENV=NCCL_DEBUG=INFO\nNCCL_DEBUG_FILE=/x\n"},
                  &out),
            0)
      << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG=WARN")) << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG_FILE=" + theirs)) << out;
}

TEST_F(EnvironmentTest, OffSetsNothingAndDropsAnAncestorsValues) {
  std::string out;
  ASSERT_EQ(probe({"unchanged"},
                  {"NCCLWATCH=off", "NCCL_DEBUG=INFO", "NCCL_DEBUG_FILE=/tmp/a/f.log",
                   "NCCLWATCH_SET_NCCL_ENV=NCCL_DEBUG=INFO\nNCCL_DEBUG_FILE=/tmp/a/f.log\nHOME=/"},
                  &out),
            0)
      << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG=<unset>")) << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG_FILE=<unset>")) << out;
  EXPECT_TRUE(has_line(out, "NCCL_TOPO_DUMP_FILE=<unset>")) << out;
  EXPECT_FALSE(exists(dir_));
}

// NVTX reaches the CUPTI the user named: the constructor points NVTX_INJECTION64_PATH at
// NCCLWATCH_CUPTI, unless NCCLWATCH_NVTX is off or the user set the path.
TEST_F(EnvironmentTest, NvtxIsPointedAtTheNamedCuptiAtLoad) {
  std::string out;
  ASSERT_EQ(probe({"unchanged"}, {"NCCLWATCH_CUPTI=/opt/x/libcupti.so"}, &out), 0) << out;
  EXPECT_TRUE(has_line(out, "NVTX_INJECTION64_PATH=/opt/x/libcupti.so")) << out;
  ASSERT_EQ(
      probe({"unchanged"}, {"NCCLWATCH_CUPTI=/opt/x/libcupti.so", "NCCLWATCH_NVTX=off"}, &out), 0)
      << out;
  EXPECT_TRUE(has_line(out, "NVTX_INJECTION64_PATH=<unset>")) << out;
  ASSERT_EQ(probe({"unchanged"},
                  {"NCCLWATCH_CUPTI=/opt/x/libcupti.so", "NVTX_INJECTION64_PATH=/mine.so"}, &out),
            0)
      << out;
  EXPECT_TRUE(has_line(out, "NVTX_INJECTION64_PATH=/mine.so")) << out;
}

// Settings are read once, at load: a value the program sets later is not used, and the first
// NCCL call says so; a bad value is said once, at the first NCCL call.
TEST_F(EnvironmentTest, SettingsAreReadAtLoadAndLateChangesAreSaid) {
  const std::string late = dir_ + "-late";
  std::string out;
  ASSERT_EQ(probe({"late", "NCCLWATCH_DIR=" + late}, {"NCCLWATCH_DRAIN_MS=soon"}, &out), 0) << out;
  EXPECT_TRUE(has_line(out, "ncclwatch: NCCLWATCH_DIR changed after start-up (now '" + late +
                                "', was '" + dir_ +
                                "'); the shim keeps the value it read when it was loaded"))
      << out;
  EXPECT_TRUE(has_line(out, "ncclwatch: bad NCCLWATCH_DRAIN_MS=soon (expected 1..10000), using 2"))
      << out;
  EXPECT_EQ(out.find("NCCLWATCH_DRAIN_MS=soon"), out.rfind("NCCLWATCH_DRAIN_MS=soon")) << out;
  EXPECT_EQ(count_entries(dir_, "ncclwatch.h."), 1) << "the trace is in the dir at load";
  EXPECT_FALSE(exists(late));
}

// Inert at load: the constructor creates no directory and no segment.
TEST_F(EnvironmentTest, AProcessThatNeverCallsNcclCreatesNothing) {
  std::string out;
  ASSERT_EQ(probe({"none"}, {}, &out), 0) << out;
  EXPECT_TRUE(has_line(out, "NCCL_DEBUG=INFO")) << out;  // set, in case NCCL comes later
  EXPECT_FALSE(exists(dir_));
  EXPECT_EQ(count_entries("/dev/shm", "ncclwatch." + job_ + "."), 0);
}

}  // namespace
}  // namespace ncclwatch::testing

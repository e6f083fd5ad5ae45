// Stragglers on a machine whose CPUs are busy, end to end: `ncclwatch run -- fake_launcher
// --nproc 4 -- fake_train ...` (scenario_run.h) while busy-loop processes compete for the CPUs.
// Host-only records (--mode host): call entries are real host times, so the hogs' descheduling
// reaches every arrival the verdict reads. Nothing here depends on how busy the machine is
// beyond the hogs: the checks are the verdicts (rank, pattern, period, cause), never timings.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenario_run.h"

namespace {

using ncclwatch::scenarios::Result;
using ncclwatch::scenarios::run_scenario;
using nlohmann::json;

const std::vector<std::string> kWorkload = {"--fwd-us", "30000", "--bwd-us",    "60000",
                                            "--opt-us", "10000", "--bucket-mb", "250"};

// Busy-loop processes for the lifetime of the object, each pinned to `cpu` unless it is -1.
class CpuHogs {
 public:
  CpuHogs(int count, int cpu) {
    for (int i = 0; i < count; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        if (cpu >= 0) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(cpu, &set);
          if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(1);
        }
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~CpuHogs() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  CpuHogs(const CpuHogs&) = delete;
  CpuHogs& operator=(const CpuHogs&) = delete;
  std::size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

// The CPUs this process may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

const json* straggler(const Result& r, int rank) {
  for (const json& s : r.report["stragglers"]) {
    if (s["rank"] == rank) return &s;
  }
  return nullptr;
}

// Issue 20 item 9: a rank late at every step (30 ms host stall) and another stalling 60 ms (a
// third of a ~190 ms step; a quarter in the job, more here for a margin over the noise of
// a loaded 2-core machine) every 5th step, 4 processes on a machine
// with a CPU hog (and whatever else runs: the suite runs tests in parallel). The persistent rank's
// spike in every step made the stall every 5th step look like chance (the spike rate of its
// "peers"), and with 4 ranks the median arrival is the mean of the 2nd and 3rd: in the stall steps
// it sat halfway to the persistent straggler and shrank the stall. The periodic rank was missed in
// 4 of 6 runs; both must be named. 41 steps: 8 stalls in the steady state, enough for the periodic
// test to exclude chance at the spike rate the hogs cause on every rank (with 5, it cannot).
TEST(ContentionScenario, PersistentAndPeriodicStragglersUnderACpuHog) {
  CpuHogs hog(1, -1);
  // The verdict is judged on the job's steps. Host-only steps come from the call gaps, which a
  // machine far busier than the hogs make (other jobs of a parallel ctest) can blur into one call
  // per step: such a run is no test of the verdict and is run again, at most twice more.
  Result r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    r = run_scenario(
        {kWorkload, {"--stall", "1:30", "--stall-every", "2:5:60"}, {"--mode", "host"}, {}, 41});
    if (r.report["straggler_analysis"].value("steady_steps", 0) == 40) break;
    std::cerr << "steps not found under this load ("
              << r.report["overlap_analysis"].value("step_source", std::string()) << ", "
              << r.report["straggler_analysis"].value("steady_steps", 0)
              << " steady steps): again\n";
  }
  ASSERT_EQ(r.report["straggler_analysis"].value("steady_steps", 0), 40) << r.log;
  const json* persistent = straggler(r, 1);
  ASSERT_NE(persistent, nullptr) << r.report["stragglers"].dump(1) << r.log;
  EXPECT_EQ((*persistent)["pattern"], "persistent") << persistent->dump(1);
  const json* periodic = straggler(r, 2);
  ASSERT_NE(periodic, nullptr) << r.report["stragglers"].dump(1) << r.log;
  EXPECT_EQ((*periodic)["pattern"], "periodic") << periodic->dump(1);
  EXPECT_EQ((*periodic)["period_steps"], 5) << periodic->dump(1);
  // Its stall steps (1-based 5, 10, ..., 40), all but one at most (a hog may blur one).
  const auto steps = (*periodic)["spike_steps"].get<std::vector<int>>();
  EXPECT_GE(steps.size(), 7u) << periodic->dump(1);
  for (int k : steps) EXPECT_EQ(k % 5, 0) << periodic->dump(1);
  // Anyone else named is late because the hogs took its CPU, and the report says so.
  for (const json& s : r.report["stragglers"]) {
    if (s["rank"] == 1 || s["rank"] == 2) continue;
    EXPECT_EQ(s["cause"], "cpu-contention") << s.dump(1);
  }
}

// A rank pinned to one CPU that three hogs pinned to the same CPU share: its 20 ms of host work
// per step takes about four times as long, it arrives late at every step, and its NCCL thread's
// run-queue wait (the shim's scheduling samples) explains it: cause cpu-contention, with the
// wait per step against its peers'.
TEST(ContentionScenario, RankPinnedToABusyCoreIsCpuContention) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2)
    GTEST_SKIP() << "needs 2 CPUs (one shared by the pinned rank and the hogs, one for the "
                    "others); this process may use "
                 << cpus.size();
  const int busy = cpus.back();
  CpuHogs hogs(3, busy);
  ASSERT_EQ(hogs.size(), 3u);
  const Result r = run_scenario({kWorkload,
                                 {"--pin", "0:" + std::to_string(busy), "--host-work", "0:20"},
                                 {"--mode", "host"},
                                 {},
                                 12});
  const json* s = straggler(r, 0);
  ASSERT_NE(s, nullptr) << r.report["stragglers"].dump(1) << r.log;
  // Late at every step; with the other CPU busy too (a loaded machine), the scheduler's slices
  // can bunch its lateness into a spike every few steps, which is then "periodic" (seen once at
  // load 10: a 107 ms spike every 4th step). The cause is the point here.
  EXPECT_TRUE((*s)["pattern"] == "persistent" || (*s)["pattern"] == "periodic") << s->dump(1);
  EXPECT_EQ((*s)["cause"], "cpu-contention") << s->dump(1);
  ASSERT_TRUE((*s)["cpu_wait_us_per_step"].is_number()) << s->dump(1);
  ASSERT_TRUE((*s)["cpu_wait_baseline_us_per_step"].is_number()) << s->dump(1);
  // Three hogs on its CPU: it waits for about 3 x 20 ms per step; at least its 20 ms of work.
  EXPECT_GT((*s)["cpu_wait_us_per_step"].get<double>() -
                (*s)["cpu_wait_baseline_us_per_step"].get<double>(),
            20'000)
      << s->dump(1);
  EXPECT_NE((*s)["evidence"].get<std::string>().find("waited for a CPU"), std::string::npos)
      << s->dump(1);
}

}  // namespace

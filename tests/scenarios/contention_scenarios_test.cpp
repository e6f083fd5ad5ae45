// Stragglers on a machine whose CPUs are busy, end to end: `ncclwatch run -- fake_launcher
// --nproc 4 -- fake_train ...` (scenario_run.h) while busy-loop processes compete for the CPUs.
// Host-only records (--mode host): call entries are real host times, so the hogs' descheduling
// reaches every arrival the verdict reads. Nothing here depends on how busy the machine is
// beyond the hogs: the checks are the verdicts (rank, pattern, period, cause), never timings.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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
  EXPECT_EQ((*s)["pattern"], "persistent") << s->dump(1);
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

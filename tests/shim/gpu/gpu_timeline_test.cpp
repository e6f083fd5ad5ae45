// The shim's GPU timeline end to end over the fake CUDA runtime and CUPTI: each test runs
// gpu_scenario (one rank's NCCL calls, NCCL kernels and compute) as a child process under some
// environment and checks what it recorded against the virtual GPU's own answer (.truth).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace {

using ncclwatch::format::Func;
using ncclwatch::format::Record;
using ncclwatch::format::RecordKind;

struct Interval {
  uint64_t comm;
  uint32_t seq;
  int64_t start, end;
};

struct ScenarioRun {
  int status = -1;
  uint32_t mode = 99;
  uint64_t cupti_dropped = 0;
  std::vector<Record> records;
  std::vector<Interval> truth;
  std::vector<std::string> warnings;  // stderr lines starting "ncclwatch:"

  std::vector<Record> of(RecordKind k) const {
    std::vector<Record> out;
    for (const auto& r : records) {
      if (r.prefix.kind == k) out.push_back(r);
    }
    return out;
  }
  std::string name(uint32_t id) const {
    std::string s;
    for (const auto& r : records) {
      if (r.prefix.kind == RecordKind::kString && r.string.prefix.tid == id) {
        s.append(r.string.text, strnlen(r.string.text, sizeof r.string.text));
      }
    }
    return s;
  }
  const Record* kernel_by_correlation(uint32_t corr) const {
    for (const auto& r : records) {
      if (r.prefix.kind == RecordKind::kKernel && r.kernel.correlation == corr) return &r;
    }
    return nullptr;
  }
};

ScenarioRun run_scenario(const char* exe, const std::string& scenario,
                         const std::vector<std::string>& env) {
  static int counter = 0;
  std::string out = ::testing::TempDir() + "gpu_scenario_" + std::to_string(getpid()) + "_" +
                    std::to_string(counter++);
  std::string err = out + ".stderr";
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& kv : env) putenv(strdup(kv.c_str()));
    if (!freopen(err.c_str(), "w", stderr)) _exit(98);
    execl(exe, exe, scenario.c_str(), out.c_str(), static_cast<char*>(nullptr));
    _exit(99);
  }
  ScenarioRun run;
  waitpid(pid, &run.status, 0);
  std::ifstream rf(out + ".records", std::ios::binary);
  rf.read(reinterpret_cast<char*>(&run.mode), sizeof run.mode);
  rf.read(reinterpret_cast<char*>(&run.cupti_dropped), sizeof run.cupti_dropped);
  Record r;
  while (rf.read(reinterpret_cast<char*>(&r), sizeof r)) run.records.push_back(r);
  std::ifstream tf(out + ".truth");
  Interval i;
  while (tf >> i.comm >> i.seq >> i.start >> i.end) run.truth.push_back(i);
  std::ifstream ef(err);
  for (std::string line; std::getline(ef, line);) {
    if (line.rfind("ncclwatch:", 0) == 0) run.warnings.push_back(line);
  }
  for (const char* ext : {".records", ".truth", ".stderr"}) std::remove((out + ext).c_str());
  return run;
}

std::vector<std::string> full_env() {
  return {std::string("NCCLWATCH_CUPTI=") + FAKE_CUPTI};
}

const Interval* truth_for(const ScenarioRun& run, uint64_t comm, uint32_t seq) {
  for (const auto& t : run.truth) {
    if (t.comm == comm && t.seq == seq) return &t;
  }
  return nullptr;
}

TEST(GpuTimeline, FullModeTiesEveryNcclCallToItsKernel) {
  ScenarioRun run = run_scenario(GPU_SCENARIO, "basic", full_env());
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.mode, 1u);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("full"), std::string::npos) << run.warnings[0];
  auto links = run.of(RecordKind::kKernelLink);
  int linked_calls = 0;
  for (uint32_t step = 0; step < 3; ++step) {
    // The plain all-reduce: one link (comm, seq) -> a kernel with the virtual GPU's interval.
    const Interval* t = truth_for(run, 0xC0, step);
    ASSERT_NE(t, nullptr);
    bool found = false;
    for (const auto& l : links) {
      if (l.link.comm_id == 0xC0 && l.link.seq == step &&
          l.prefix.u8a == uint8_t(Func::kAllReduce)) {
        const Record* k = run.kernel_by_correlation(l.link.correlation);
        ASSERT_NE(k, nullptr);
        // CUPTI interpolates onto the callback's clock: equal within a microsecond.
        EXPECT_NEAR(static_cast<double>(k->kernel.start_ns), static_cast<double>(t->start), 1e3);
        EXPECT_NEAR(static_cast<double>(k->kernel.end_ns - k->kernel.start_ns), 1e6, 1e3);
        EXPECT_TRUE(k->prefix.flags & ncclwatch::format::kKernelIsNccl);
        EXPECT_EQ(run.name(k->kernel.name_id), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
        found = true;
        ++linked_calls;
      }
    }
    EXPECT_TRUE(found) << "step " << step;
    // The group: two kernels launched inside GroupEnd, tied to the group.
    int group_links = 0;
    for (const auto& l : links) {
      if (l.link.group_id == 100 + step && l.prefix.u8a == uint8_t(Func::kGroupEnd)) {
        EXPECT_EQ(l.link.comm_id, 0u);
        EXPECT_NE(run.kernel_by_correlation(l.link.correlation), nullptr);
        ++group_links;
      }
    }
    EXPECT_EQ(group_links, 2);
    // Non-blocking: launched from NCCL's thread, tied to its stream only.
    const Interval* nb = truth_for(run, 0xC2, step);
    ASSERT_NE(nb, nullptr);
    bool nb_found = false;
    for (const auto& l : links) {
      if (l.prefix.u8a != uint8_t(Func::kUnknown)) continue;
      const Record* k = run.kernel_by_correlation(l.link.correlation);
      if (k && std::llabs(k->kernel.start_ns - nb->start) < 1000) {
        EXPECT_NE(l.link.stream, 0u);
        nb_found = true;
      }
    }
    EXPECT_TRUE(nb_found) << "step " << step;
  }
  EXPECT_EQ(linked_calls, 3);
  // The one-rank broadcast launched nothing: no link names comm 0xC3.
  for (const auto& l : links) EXPECT_NE(l.link.comm_id, 0xC3u);
  // The captured call is marked captured.
  bool captured = false;
  for (const auto& l : links) {
    if (l.link.seq == 5000 && (l.prefix.flags & ncclwatch::format::kCallGraphCaptured))
      captured = true;
  }
  EXPECT_TRUE(captured);
}

TEST(GpuTimeline, ComputeOverlapsCommunicationAsModelled) {
  ScenarioRun run = run_scenario(GPU_SCENARIO, "basic", full_env());
  ASSERT_EQ(run.status, 0);
  std::vector<Record> compute, nccl;
  for (const auto& k : run.of(RecordKind::kKernel)) {
    if (k.prefix.u8a != uint8_t(ncclwatch::format::ActivityKind::kKernel)) continue;
    (k.prefix.flags & ncclwatch::format::kKernelIsNccl ? nccl : compute).push_back(k);
  }
  ASSERT_EQ(compute.size(), 9u);
  ASSERT_EQ(nccl.size(), 12u);  // 3 steps x (all-reduce + 2 group kernels + non-blocking)
  for (const auto& c : compute) {
    EXPECT_EQ(run.name(c.kernel.name_id), "backward_kernel");
    EXPECT_EQ(c.kernel.end_ns - c.kernel.start_ns, 2'000'000);
    EXPECT_NE(c.prefix.tid, nccl[0].prefix.tid);  // another stream
  }
  // Step 0: the all-reduce starts while the first backward kernel runs (other stream) and the
  // next backward kernels run while it does.
  const Interval* ar = truth_for(run, 0xC0, 0);
  ASSERT_NE(ar, nullptr);
  int overlapping = 0;
  for (const auto& c : compute) {
    if (c.kernel.start_ns < ar->end && c.kernel.end_ns > ar->start) ++overlapping;
  }
  EXPECT_GE(overlapping, 1);
  // Host side of launches, memcpy and the NVTX step ranges are there too. Every kernel's launch
  // record: the compute kernels' from the runtime function the application called (CUPTI gives
  // no driver record for the driver call inside it), NCCL's from its direct driver launch.
  std::map<uint32_t, uint8_t> api_of;  // correlation -> LaunchApi
  for (const auto& l : run.of(RecordKind::kLaunch)) api_of[l.launch.correlation] = l.prefix.u8a;
  for (const auto& c : compute) {
    ASSERT_TRUE(api_of.count(c.kernel.correlation)) << "no launch record for a compute kernel";
    EXPECT_EQ(api_of[c.kernel.correlation], uint8_t(ncclwatch::format::LaunchApi::kRuntimeKernel));
  }
  for (const auto& k : nccl) {
    ASSERT_TRUE(api_of.count(k.kernel.correlation)) << "no launch record for an NCCL kernel";
    EXPECT_EQ(api_of[k.kernel.correlation], uint8_t(ncclwatch::format::LaunchApi::kDriverKernel));
  }
  int memcpys = 0;
  for (const auto& k : run.of(RecordKind::kKernel)) {
    if (k.prefix.u8a == uint8_t(ncclwatch::format::ActivityKind::kMemcpy)) {
      EXPECT_EQ(k.kernel.bytes, 1u << 20);
      ++memcpys;
    }
  }
  EXPECT_EQ(memcpys, 3);
  auto ranges = run.of(RecordKind::kNvtx);
  ASSERT_EQ(ranges.size(), 3u);
  for (const auto& r : ranges) {
    EXPECT_EQ(run.name(r.nvtx.name_id), "step");
    EXPECT_LT(r.nvtx.start_ns, r.nvtx.end_ns);
  }
}

// Lite mode: CUDA events around each collective / group give the same GPU intervals.
void expect_lite_intervals(const ScenarioRun& run) {
  auto coll = run.of(RecordKind::kCollGpu);
  for (uint32_t step = 0; step < 3; ++step) {
    const Interval* t = truth_for(run, 0xC0, step);
    ASSERT_NE(t, nullptr);
    bool found = false;
    for (const auto& c : coll) {
      if (c.coll_gpu.comm_id == 0xC0 && c.coll_gpu.seq == step &&
          c.prefix.u8a == uint8_t(Func::kAllReduce)) {
        // The events bracket the kernel: the start event completes when recorded on the idle
        // stream, just before the launch; the end event when the kernel ends. The interval can
        // only be wider than the kernel's, by the host's launch gap (bounded loosely here so a
        // loaded machine cannot fail the test). The other side is the anchor's error: half of a
        // bracket the timer retries until it is <= 20 us, plus the float-ms rounding; 30 us.
        EXPECT_LE(c.coll_gpu.start_ns, t->start + 30'000);
        EXPECT_LT(t->start - c.coll_gpu.start_ns, 5'000'000);
        EXPECT_GE(c.coll_gpu.end_ns, t->end - 30'000);
        EXPECT_LT(c.coll_gpu.end_ns - t->end, 5'000'000);
        EXPECT_LE(c.coll_gpu.start_ns, c.coll_gpu.end_ns);
        found = true;
      }
    }
    EXPECT_TRUE(found) << "step " << step;
    int groups = 0;
    for (const auto& c : coll) {
      if (c.coll_gpu.group_id == 100 + step && c.prefix.u8a == uint8_t(Func::kGroupEnd)) ++groups;
    }
    EXPECT_EQ(groups, 1);  // both comms on one stream: one interval for the group
  }
  EXPECT_TRUE(run.of(RecordKind::kKernel).empty());  // no compute timeline in lite mode
}

TEST(GpuTimeline, LiteModeGivesTheCollectiveIntervals) {
  auto env = full_env();
  env.push_back("NCCLWATCH_MODE=lite");
  ScenarioRun run = run_scenario(GPU_SCENARIO, "basic", env);
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.mode, 2u);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("lite"), std::string::npos);
  expect_lite_intervals(run);
}

TEST(GpuTimeline, BusyCuptiFallsBackToLiteWithOneWarning) {
  auto env = full_env();
  env.push_back("NCCLWATCH_FAKE_CUPTI_BUSY=1");
  ScenarioRun run = run_scenario(GPU_SCENARIO, "basic", env);
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.mode, 2u);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("busy"), std::string::npos) << run.warnings[0];
  expect_lite_intervals(run);
}

TEST(GpuTimeline, NoCudaGivesHostOnlyWithOneWarning) {
  ScenarioRun run = run_scenario(GPU_SCENARIO_NOCUDA, "basic", full_env());
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.mode, 0u);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("no CUDA"), std::string::npos) << run.warnings[0];
  EXPECT_TRUE(run.of(RecordKind::kKernel).empty());
  EXPECT_TRUE(run.of(RecordKind::kCollGpu).empty());
}

TEST(GpuTimeline, ZeroTimestampBugIsDetectedAndRecovered) {
  auto env = full_env();
  env.push_back("NCCLWATCH_FAKE_CUPTI_ZERO_TS=1");
  ScenarioRun run = run_scenario(GPU_SCENARIO, "basic", env);
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.mode, 1u);
  EXPECT_GT(run.cupti_dropped, 0u);  // the zero-timestamp kernels of step 0
  bool warned = false;
  for (const auto& w : run.warnings)
    warned |= w.find("zero kernel timestamps") != std::string::npos;
  EXPECT_TRUE(warned);
  // After re-attaching with a measured clock, later kernels are on the host clock again.
  for (const auto& k : run.of(RecordKind::kKernel)) {
    EXPECT_GT(k.kernel.start_ns, 0);
  }
  const Interval* t = truth_for(run, 0xC0, 2);
  ASSERT_NE(t, nullptr);
  bool found = false;
  for (const auto& k : run.of(RecordKind::kKernel)) {
    if (std::llabs(k.kernel.start_ns - t->start) < 100'000 &&
        std::llabs(k.kernel.end_ns - t->end) < 100'000) {
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(GpuTimeline, RiskyRuntimeUsesTheMeasuredClockFromTheStart) {
  auto env = full_env();
  env.push_back("NCCLWATCH_FAKE_CUPTI_ZERO_TS=1");
  env.push_back("NCCLWATCH_FAKE_CUDA_RUNTIME_VERSION=12080");
  ScenarioRun run = run_scenario(GPU_SCENARIO, "basic", env);
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("measured"), std::string::npos) << run.warnings[0];
  EXPECT_EQ(run.cupti_dropped, 0u);
  for (uint32_t step = 0; step < 3; ++step) {
    const Interval* t = truth_for(run, 0xC0, step);
    ASSERT_NE(t, nullptr);
    bool found = false;
    for (const auto& k : run.of(RecordKind::kKernel)) {
      if (std::llabs(k.kernel.start_ns - t->start) < 100'000 &&
          std::llabs(k.kernel.end_ns - t->end) < 100'000) {
        found = true;
      }
    }
    EXPECT_TRUE(found) << "step " << step;
  }
}

}  // namespace

namespace {

TEST(GpuTimeline, UnloadableCuptiFallsBackToLiteSayingWhy) {
  ScenarioRun run =
      run_scenario(GPU_SCENARIO, "basic", {"NCCLWATCH_CUPTI=/nonexistent/libcupti.so"});
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.mode, 2u);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("CUPTI cannot be loaded"), std::string::npos) << run.warnings[0];
  expect_lite_intervals(run);
}

TEST(GpuTimeline, HostModeRecordsNoGpuTime) {
  auto env = full_env();
  env.push_back("NCCLWATCH_MODE=host");
  ScenarioRun run = run_scenario(GPU_SCENARIO, "basic", env);
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.mode, 0u);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_TRUE(run.of(RecordKind::kKernel).empty());
  EXPECT_TRUE(run.of(RecordKind::kCollGpu).empty());
  EXPECT_TRUE(run.of(RecordKind::kKernelLink).empty());
}

TEST(GpuTimeline, NcclOnlyPolicyKeepsEveryCollectiveAndDropsCompute) {
  auto env = full_env();
  env.push_back("NCCLWATCH_KERNELS=nccl");
  ScenarioRun run = run_scenario(GPU_SCENARIO, "basic", env);
  ASSERT_EQ(run.status, 0);
  int nccl = 0;
  for (const auto& k : run.of(RecordKind::kKernel)) {
    EXPECT_TRUE(k.prefix.flags & ncclwatch::format::kKernelIsNccl) << run.name(k.kernel.name_id);
    ++nccl;
  }
  EXPECT_EQ(nccl, 12);                               // every NCCL kernel, nothing else
  EXPECT_TRUE(run.of(RecordKind::kLaunch).empty());  // one per kernel: left out when bounded
  EXPECT_FALSE(run.of(RecordKind::kKernelLink).empty());
}

}  // namespace

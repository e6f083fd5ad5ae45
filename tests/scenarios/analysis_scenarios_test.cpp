// Known-answer scenarios, end to end: `ncclwatch run --json FILE -- fake_launcher --nproc 4 --
// fake_train ...` (libncclwatch.so preloaded over the fake CUDA/CUPTI/NCCL and their virtual GPU
// clock), then the JSON report is checked for the verdict, the rank and the numbers.
//
// Times are 10x fake_train's defaults. The fake GPU runs on a virtual host clock
// (NCCLWATCH_FAKE_VIRTUAL_HOST=1: a launch is dated from the end of the host's last synchronize
// plus its declared stalls), so a descheduled host on a loaded machine does not move the GPU
// figures; host-side timestamps (host-only mode) stay real and carry that noise, which the
// verdicts must survive. Figures carry the tolerances stated at each check. The workload: forward
// 30 ms, backward 60 ms in 8 kernels (bucket b of 4 ready after 15 (b+1) ms of backward), optimizer
// 10 ms, 250 MiB buckets. The fake NCCL ends an all-reduce T = 262144000 B / 10 GB/s + 5 µs =
// 26.219 ms after its last member started.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenario_run.h"

namespace {

using nlohmann::json;

using ncclwatch::scenarios::Result;
using ncclwatch::scenarios::run_scenario;

const std::vector<std::string> kWorkload = {"--fwd-us", "30000", "--bwd-us",    "60000",
                                            "--opt-us", "10000", "--bucket-mb", "250"};

const std::vector<std::string> kTwoHosts = {
    "--env-rank", "0", "NCCLWATCH_HOST=node-a", "--env-rank", "1", "NCCLWATCH_HOST=node-a",
    "--env-rank", "2", "NCCLWATCH_HOST=node-b", "--env-rank", "3", "NCCLWATCH_HOST=node-b"};

double num(const json& j, const char* k) {
  return j.at(k).get<double>();
}

std::string first_finding_text(const Result& r) {
  // The text report is printed by `run`; the first analysis line follows the severity tag.
  const auto at = r.log.find("[stragglers]");
  return at == std::string::npos ? "" : r.log.substr(at, r.log.find('\n', at) - at);
}

TEST(Scenario, CleanRunHasNoStragglerAndHandComputedOverlap) {
  // AR1 [45, 71.2] ms under backward (ends at 90); AR2 queued behind it [71.2, 97.4], overlapped
  // until 90; AR3, AR4 after backward. Overlapped 45 of 4T = 104.9 ms -> 42.9%; exposed 59.9
  // ms/step, all transfer (ranks arrive together). Tolerances: 3 points, 3 ms/step.
  const Result r = run_scenario({kWorkload, {}, {}, kTwoHosts});
  // Every comm id in the report joins with comms[].id (one spelling: 0x + 16 hex digits).
  std::set<std::string> comm_ids;
  for (const json& c : r.report["comms"]) comm_ids.insert(c["id"].get<std::string>());
  ASSERT_FALSE(comm_ids.empty()) << r.log;
  ASSERT_FALSE(r.report["buckets"].empty()) << r.log;
  ASSERT_FALSE(r.report["cross_node_comms"].empty()) << r.log;
  for (const char* list : {"buckets", "cross_node_comms"}) {
    for (const json& b : r.report[list]) {
      EXPECT_EQ(comm_ids.count(b["comm_id"].get<std::string>()), 1u) << list << ": " << b.dump();
    }
  }
  EXPECT_TRUE(r.report["stragglers"].empty()) << r.report["stragglers"].dump(1) << r.log;
  ASSERT_EQ(r.report["overlap"].size(), 4u);
  for (const json& o : r.report["overlap"]) {
    EXPECT_NEAR(num(o, "overlap_pct"), 42.9, 3.0) << o.dump();
    EXPECT_EQ(o["steps"], 11);  // 12 steps, the first left out as warm-up
    EXPECT_NEAR(num(o, "transfer_us") / 11, 59'880, 3000) << o.dump();
    EXPECT_LT(num(o, "wait_us") / 11, 3000) << o.dump();
  }
  const json& b = r.report["buckets"];
  ASSERT_EQ(b.size(), 4u);
  EXPECT_NEAR(num(b[0], "overlap_pct"), 100.0, 1.0);
  EXPECT_NEAR(num(b[1], "overlap_pct"), 100.0 * (90 - 71.22) / 26.22, 6.0);  // 71.6%
  EXPECT_NEAR(num(b[3], "overlap_pct"), 0.0, 1.0);
  EXPECT_EQ(b[0]["bytes"], 262144000);
  EXPECT_NE(r.log.find("no straggler"), std::string::npos) << r.log;
}

TEST(Scenario, NoOverlapWhenAllReducesFollowBackward) {
  // Every all-reduce runs after backward: 0% overlapped, 4T = 104.9 ms/step exposed as transfer
  // (plus whatever a starved host adds as waiting). Tolerance 3 ms/step.
  const Result r = run_scenario({kWorkload, {"--no-overlap"}, {}, {}});
  for (const json& o : r.report["overlap"]) {
    EXPECT_NEAR(num(o, "overlap_pct"), 0.0, 0.5) << o.dump();
    EXPECT_NEAR(num(o, "transfer_us") / 11, 104'877, 3000) << o.dump();
  }
  EXPECT_TRUE(r.report["stragglers"].empty()) << r.report["stragglers"].dump(1);
}

// The same job with full detail only in two scheduled capture windows (the shim's tiers,
// docs/always-on.md): the report opens with the history, which names rank 2 gpu-slow over the
// whole run from the step summaries, then each window's analysis, newest first.
TEST(Scenario, SlowGpuRankInCaptureWindows) {
  ncclwatch::scenarios::Scenario s{kWorkload, {"--slow", "2:1.5"}, {}, kTwoHosts};
  s.steps = 16;
  for (const char* e : {"NCCLWATCH_DETAIL=windows", "NCCLWATCH_CAPTURE=steps:3-5,steps:10-12"}) {
    s.launcher_env.push_back("--env");
    s.launcher_env.push_back(e);
  }
  const Result r = run_scenario(s);
  ASSERT_EQ(r.report["windows"].size(), 2u) << r.log;
  for (const json& w : r.report["windows"]) {
    EXPECT_EQ(w["trigger"], "schedule") << w.dump();
    EXPECT_TRUE(w["report"].is_object()) << w.dump().substr(0, 500);
  }
  EXPECT_EQ(r.report["windows"][0]["first_step"], 3) << r.log;
  const json& late = r.report["history"]["late_ranks"];
  ASSERT_FALSE(late.empty()) << r.report["history"].dump(1);
  for (const json& l : late) {
    EXPECT_EQ(l["rank"], 2) << l.dump();
    EXPECT_EQ(l["cause"], "gpu-slow") << l.dump();
  }
  const auto newest = r.log.find("window 2 of 2, schedule: steps 10-12");
  const auto oldest = r.log.find("======== window 1 of 2, schedule: steps 3-5");
  ASSERT_NE(newest, std::string::npos) << r.log;
  ASSERT_NE(oldest, std::string::npos) << r.log;
  EXPECT_LT(r.log.find("== History"), newest);
  EXPECT_LT(newest, oldest);
}

TEST(Scenario, SlowGpuRank) {
  // Rank 2 computes 1.5x slower: 150 ms of compute per step vs 100 ms. Its optimizer (15 vs
  // 10 ms, after the common all-reduce end) starts its next step 5 ms late, its forward adds
  // 15 ms and its first bucket's backward share 7.5 ms: 27.5 ms late at bucket 1 (untied; later
  // buckets queue behind the first and start together). Tolerance 15%.
  const Result r = run_scenario({kWorkload, {"--slow", "2:1.5"}, {}, kTwoHosts});
  ASSERT_EQ(r.report["stragglers"].size(), 1u) << r.report["stragglers"].dump(1) << r.log;
  const json& s = r.report["stragglers"][0];
  EXPECT_EQ(s["rank"], 2);
  EXPECT_EQ(s["host"], "node-b");
  EXPECT_EQ(s["cause"], "gpu-slow");
  EXPECT_EQ(s["pattern"], "persistent");
  EXPECT_GE(num(s, "arrived_last_pct"), 80.0);
  EXPECT_NEAR(num(s, "lateness_when_last_us"), 27'500, 4125) << s.dump();
  EXPECT_NE(s["evidence"].get<std::string>().find("compute 150.0 ms/step"), std::string::npos)
      << s.dump();
  // The run's history (the shim's step summaries, docs/always-on.md) names the same rank, cause
  // and no other.
  const json& late = r.report["history"]["late_ranks"];
  ASSERT_FALSE(late.empty()) << r.report["history"].dump(1);
  for (const json& l : late) {
    EXPECT_EQ(l["rank"], 2) << l.dump();
    EXPECT_EQ(l["cause"], "gpu-slow") << l.dump();
  }
}

TEST(Scenario, HostStalledRank) {
  // Rank 1 sleeps 30 ms before every step: 30 ms late at bucket 1 (untied), tied after.
  // Tolerances: 15% on lateness, 25% on the inflicted wait (a sum over 12 steps x 3 peers).
  const Result r = run_scenario({kWorkload, {"--stall", "1:30"}, {}, kTwoHosts});
  ASSERT_EQ(r.report["stragglers"].size(), 1u) << r.report["stragglers"].dump(1) << r.log;
  const json& s = r.report["stragglers"][0];
  EXPECT_EQ(s["rank"], 1);
  EXPECT_EQ(s["cause"], "host-stall");
  EXPECT_GE(num(s, "arrived_last_pct"), 80.0);
  EXPECT_NEAR(num(s, "lateness_when_last_us"), 30'000, 4500) << s.dump();
  // Inflicted: 3 peers x 30 ms per step, 12 steps -> 1080 ms.
  EXPECT_NEAR(num(s, "inflicted_wait_us"), 1'080'000, 270'000) << s.dump();
  // Its peers wait 30 ms inside bucket 1 (hidden by their backward), which pushes their whole
  // chain back: 30 ms/step of their exposed time is waiting for rank 1 (+-15%).
  for (int peer : {0, 2, 3}) {
    EXPECT_NEAR(num(r.report["overlap"][peer], "wait_us") / 11, 30'000, 4500)
        << r.report["overlap"][peer].dump();
  }
  // Late where it happens (bucket 1), costed: 3 peers x 30 ms per step = 90 ms of the job's
  // rank-time per step, i.e. 90 / 4 ranks = 22.5 ms of every rank's step (docs/verdicts.md).
  EXPECT_EQ(first_finding_text(r).rfind("[stragglers] rank 1 (node-a) is ", 0), 0u) << r.log;
  EXPECT_NE(first_finding_text(r).find("late at the first all-reduce of every step, costing"),
            std::string::npos)
      << r.log;
  EXPECT_NEAR(num(s, "lateness_us"), 30'000, 4500) << s.dump();
  EXPECT_NEAR(num(s, "cost_us_per_step"), 22'500, 5'625) << s.dump();
  EXPECT_EQ(s["severity"], "warning");
  EXPECT_NE(first_finding_text(r).find("host-side stall"), std::string::npos) << r.log;
}

TEST(Scenario, WholeSlowNode) {
  // Both ranks of node-b stall 30 ms: node-b is last at (nearly) every untied instance.
  const Result r = run_scenario({kWorkload, {"--stall", "2:30", "--stall", "3:30"}, {}, kTwoHosts});
  const json& nodes = r.report["straggler_analysis"]["node_problems"];
  ASSERT_EQ(nodes.size(), 1u) << r.report["straggler_analysis"].dump(1) << r.log;
  EXPECT_EQ(nodes[0]["host"], "node-b");
  EXPECT_EQ(nodes[0]["ranks"], json({2, 3}));
  for (const json& s : r.report["stragglers"]) {
    EXPECT_EQ(s["host"], "node-b") << s.dump();
    EXPECT_TRUE(s["node_problem"].get<bool>());
    EXPECT_EQ(s["cause"], "host-stall");
  }
  EXPECT_EQ(r.report["stragglers"].size(), 2u);
}

TEST(Scenario, PeriodicSpikeEveryFourthStep) {
  // Rank 3 runs an extra 60 ms kernel in backward at steps 4, 8, 12 (fake step % 4 == 3):
  // 60 ms late there, on time elsewhere; its compute those steps is 60 ms above its others.
  // Tolerance 15% on the spike lateness.
  const Result r = run_scenario({kWorkload, {"--spike", "3:4:60"}, {}, kTwoHosts, 13});
  ASSERT_EQ(r.report["stragglers"].size(), 1u) << r.report["stragglers"].dump(1) << r.log;
  const json& s = r.report["stragglers"][0];
  EXPECT_EQ(s["rank"], 3);
  EXPECT_EQ(s["pattern"], "periodic");
  EXPECT_EQ(s["period_steps"], 4);
  EXPECT_EQ(s["spike_steps"], json({4, 8, 12}));
  EXPECT_NEAR(num(s, "spike_lateness_us"), 60'000, 9000) << s.dump();
  EXPECT_EQ(s["cause"], "gpu-slow");
}

TEST(Scenario, HostOnlyRecordsStillFindTheStraggler) {
  const Result r = run_scenario({kWorkload, {"--stall", "1:30"}, {"--mode", "host"}, {}});
  EXPECT_EQ(r.report["straggler_analysis"]["timestamps"], "call_entry");
  ASSERT_GE(r.report["stragglers"].size(), 1u) << r.log;
  EXPECT_EQ(r.report["stragglers"][0]["rank"], 1);
  EXPECT_EQ(r.report["stragglers"][0]["cause"], "unknown");
  EXPECT_TRUE(r.report["overlap"][0]["overlap_pct"].is_null());
}

TEST(Scenario, NvtxStepsAreUsed) {
  const Result r = run_scenario({kWorkload, {"--nvtx", "--stall", "1:30"}, {}, {}});
  EXPECT_NE(r.report["overlap_analysis"]["step_source"].get<std::string>().find("ranges"),
            std::string::npos)
      << r.report["overlap_analysis"].dump();
  ASSERT_EQ(r.report["stragglers"].size(), 1u) << r.log;
  EXPECT_EQ(r.report["stragglers"][0]["cause"], "host-stall");
}

}  // namespace

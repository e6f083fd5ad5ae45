// The pattern verdict end to end, on fake_train under fake_launcher (4 ranks): a data-loader
// sawtooth, a periodic checkpoint, a lagging node, and a healthy run that gets no warning.
//
// Workload (10x fake_train's defaults, so host noise on a busy CI machine stays small next to
// the step): forward 30 ms, backward 60 ms in 8 kernels, optimizer 10 ms, 4 buckets of 25 MiB
// (the fake NCCL ends an all-reduce 26214400 B / 10 GB/s + 5 µs = 2.6 ms after its last member
// started): compute 100 ms of a ~103 ms step. A starved host only adds idle time, so the healthy
// check has the margin of 80% useful compute vs ~97%. Steps come from the NVTX "step" ranges:
// with 25 MiB buckets the gaps between a step's all-reduces (12 ms) and the step's widest gap
// (55 ms) are close enough that a starved host can blur the collective period; the idle
// between ranges (where the stalls sleep) belongs to the following step.
#include <cstdio>
#include <set>

#include "scenario_run.h"

namespace ncclwatch::scenarios {
namespace {

using nlohmann::json;

const std::vector<std::string> kWorkload = {
    "--fwd-us", "30000", "--bwd-us", "60000", "--opt-us", "10000", "--bucket-mb", "25", "--nvtx"};
const std::vector<std::string> kTwoHosts = {
    "--env-rank", "0", "NCCLWATCH_HOST=node-a", "--env-rank", "1", "NCCLWATCH_HOST=node-a",
    "--env-rank", "2", "NCCLWATCH_HOST=node-b", "--env-rank", "3", "NCCLWATCH_HOST=node-b"};

std::string fmt_step(int rank, int step) {
  return std::to_string(rank) + ":" + std::to_string(step) + ":60";
}

std::string pattern_line(const Result& r) {
  const auto at = r.log.find("[pattern]");
  return at == std::string::npos ? "" : r.log.substr(at, r.log.find('\n', at) - at);
}

TEST(PatternScenario, HealthyRunHasNoPatternWarning) {
  const Result r = run_scenario({kWorkload, {}, {}, kTwoHosts});
  EXPECT_EQ(r.report["pattern"]["row"], "healthy") << r.report["pattern"].dump() << r.log;
  EXPECT_GE(r.report["pattern"]["useful_compute_pct"].get<double>(), 80.0);
  EXPECT_EQ(r.log.find("WARNING  [pattern]"), std::string::npos) << r.log;
  EXPECT_EQ(pattern_line(r).rfind("[pattern] no low-utilization pattern", 0), 0u) << r.log;
  ASSERT_EQ(r.report["breakdown"].size(), 4u);
  for (const json& b : r.report["breakdown"]) {
    EXPECT_EQ(b["basis"], "gpu");
    // 100 ms of compute per step, within 3 %.
    EXPECT_NEAR(b["compute_us"].get<double>(), 100'000, 3000) << b.dump();
  }
}

TEST(PatternScenario, DataLoaderSawtooth) {
  // Every rank sleeps 30 ms before each step: ~30 of ~133 ms idle at the step boundary.
  const Result r =
      run_scenario({kWorkload,
                    {"--stall", "0:30", "--stall", "1:30", "--stall", "2:30", "--stall", "3:30"},
                    {},
                    {}});
  EXPECT_EQ(r.report["pattern"]["row"], "dataloader") << r.report["pattern"].dump() << r.log;
  EXPECT_NE(pattern_line(r).find("at the step boundary on every rank"), std::string::npos) << r.log;
  for (const json& b : r.report["breakdown"]) {
    // Most of the 30 ms sleep (measured 27-35 ms on a loaded 2-core machine: the fake GPU's
    // kernel times and the host's sleeps do not line up to the ms).
    EXPECT_GE(b["idle_step_boundary_us"].get<double>(), 20'000) << b.dump();
    EXPECT_LE(b["idle_step_boundary_us"].get<double>(), 60'000) << b.dump();
  }
}

TEST(PatternScenario, CheckpointEveryFourSteps) {
  // Every rank sleeps 60 ms before (0-based) steps 3, 7 and 11, i.e. after NVTX step ranges 3, 7
  // and 11 (1-based): the idle after a range belongs to that range's step (step_plan.h).
  std::vector<std::string> args;
  for (int rank = 0; rank < 4; ++rank) {
    for (int step : {3, 7, 11}) {
      args.insert(args.end(), {"--stall-step", fmt_step(rank, step)});
    }
  }
  const Result r = run_scenario({kWorkload, args, {}, {}, 13});
  EXPECT_EQ(r.report["pattern"]["row"], "checkpoint") << r.report["pattern"].dump() << r.log;
  EXPECT_EQ(r.report["pattern"]["spike_steps"], json({3, 7, 11}));
  EXPECT_EQ(r.report["pattern"]["period_steps"], 4);
}

TEST(PatternScenario, LaggingNode) {
  const Result r = run_scenario({kWorkload, {"--stall", "2:30", "--stall", "3:30"}, {}, kTwoHosts});
  EXPECT_EQ(r.report["pattern"]["row"], "lagging") << r.report["pattern"].dump() << r.log;
  EXPECT_NE(pattern_line(r).find("one node lagging the rest — node node-b (2 ranks)"),
            std::string::npos)
      << r.log;
}

TEST(PatternScenario, TraceExportOfAWindowOfSteps) {
  // `run --trace FILE --steps 2:3`: one process per rank, only ProfilerStep#2 and #3, kernels on
  // stream tracks, all-reduces linked across the 4 ranks (4 per step -> 8 flow chains).
  Scenario s{kWorkload, {}, {}, kTwoHosts, 5};
  const std::string dir = ::testing::TempDir() + "pattern_trace_" + std::to_string(getpid());
  s.run_args = {"--trace", dir + ".json", "--steps", "2:3"};
  const Result r = run_scenario(s);
  std::ifstream in(dir + ".json");
  const json t = json::parse(in, nullptr, false);
  ASSERT_TRUE(t.is_object()) << r.log;
  EXPECT_EQ(t["distributedInfo"]["world_size"], 4);
  std::set<int> ranks;
  std::set<std::string> steps;
  std::size_t kernels = 0, flow_starts = 0;
  for (const json& ev : t["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "process_name") ranks.insert(ev["pid"].get<int>());
    if (ev["ph"] == "X" && ev["cat"] == "user_annotation") steps.insert(ev["name"]);
    if (ev["ph"] == "X" && ev["cat"] == "kernel") ++kernels;
    if (ev["ph"] == "s") ++flow_starts;
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(steps, (std::set<std::string>{"ProfilerStep#2", "ProfilerStep#3"}));
  EXPECT_GT(kernels, 0u);
  EXPECT_EQ(flow_starts, 8u);
  EXPECT_NE(r.log.find("[trace] timeline written to"), std::string::npos) << r.log;
  std::remove((dir + ".json").c_str());
}

TEST(PatternScenario, MalformedStepWindowIsAUsageError) {
  const int status = std::system((std::string(NCCLWATCH_EXE) +
                                  " report /nonexistent --trace /dev/null --steps 5:2 2>/dev/null")
                                     .c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace ncclwatch::scenarios

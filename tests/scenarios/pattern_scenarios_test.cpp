// The pattern verdict end to end, on fake_train under fake_launcher (4 ranks): a data-loader
// sawtooth, a periodic checkpoint, a lagging node, collective-aligned drops (a slow fabric),
// flat low utilization from many tiny launch-bound kernels, a tensor-parallel communicator that
// spans nodes (and the same one kept inside nodes), and a healthy run that gets no warning.
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

// The sparkline under the pattern line, between its '|' (blocks or ASCII by the locale).
std::string pattern_sparkline(const Result& r) {
  const auto at = r.log.find("[pattern]");
  if (at == std::string::npos) return "";
  const auto line = r.log.find('\n', at) + 1;
  const std::string next = r.log.substr(line, r.log.find('\n', line) - line);
  if (next.find("         compute, steps ") != 0) return "";
  const auto open = next.find('|'), close = next.rfind('|');
  return close > open ? next.substr(open + 1, close - open - 1) : "";
}

// Runs of blanks (a GPU at 0 % compute) in a sparkline, not counting one at either end.
std::size_t dips(const std::string& spark) {
  std::size_t n = 0;
  for (std::size_t i = 1; i < spark.size(); ++i) n += spark[i] == ' ' && spark[i - 1] != ' ';
  return n;
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
  // The sparkline of 4 steps shows the drop at each of their boundaries.
  EXPECT_GE(dips(pattern_sparkline(r)), 3u) << r.log;
  for (const json& b : r.report["breakdown"]) {
    // Most of the 30 ms sleep (measured 27-35 ms on a loaded 2-core machine: the fake GPU's
    // kernel times and the host's sleeps do not line up to the ms).
    EXPECT_GE(b["idle_step_boundary_us"].get<double>(), 20'000) << b.dump();
    EXPECT_LE(b["idle_step_boundary_us"].get<double>(), 60'000) << b.dump();
  }
}

// The report's findings in the order printed (the lines before the first section).
std::vector<std::string> finding_lines(const Result& r) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < r.log.size()) {
    const std::size_t nl = r.log.find('\n', at);
    const std::string line =
        r.log.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (line.rfind("WARNING ", 0) == 0 || line.rfind("CRITICAL", 0) == 0 ||
        line.rfind("info    ", 0) == 0)
      out.push_back(line);
    if (line.rfind("== ", 0) == 0 || nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

TEST(PatternScenario, AStallOnEveryRankOutranksASlowerGpu) {
  // Every rank sleeps 30 ms before each step and rank 2's GPU is 1.3x slower (issue 21): the
  // stall costs far more, so it is the first line, and nothing calls the straggler the first
  // fix.
  const Result r = run_scenario({kWorkload,
                                 {"--stall", "0:30", "--stall", "1:30", "--stall", "2:30",
                                  "--stall", "3:30", "--slow", "2:1.3"},
                                 {},
                                 kTwoHosts});
  const std::vector<std::string> lines = finding_lines(r);
  ASSERT_FALSE(lines.empty()) << r.log;
  EXPECT_EQ(lines[0].rfind("WARNING  [pattern] sawtooth", 0), 0u) << r.log;
  for (const std::string& l : lines) EXPECT_EQ(l.find("fix it first"), std::string::npos) << l;
  EXPECT_EQ(r.report["findings"][0]["source"], "pattern") << r.report["findings"].dump(1);
}

TEST(PatternScenario, NcclOnlyKernelsAreNamedNotHostOnly) {
  // NCCLWATCH_KERNELS=nccl: the trace header says so, and the report names it instead of
  // "host-only records" (its rank table says cupti:nccl).
  std::vector<std::string> env;
  for (int rank = 0; rank < 4; ++rank)
    env.insert(env.end(), {"--env-rank", std::to_string(rank), "NCCLWATCH_KERNELS=nccl"});
  const Result r = run_scenario({kWorkload, {}, {}, env, 10});
  EXPECT_EQ(r.log.find("host-only records"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("compute kernels left out on request (NCCLWATCH_KERNELS=nccl on 4 of 4 "
                       "ranks)"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("cupti:nccl"), std::string::npos) << r.log;
  ASSERT_EQ(r.report["ranks"].size(), 4u);
  for (const json& rank : r.report["ranks"]) EXPECT_EQ(rank["kernels"], "nccl") << rank.dump();
  EXPECT_EQ(r.log.find("WARNING  [pattern]"), std::string::npos) << r.log;
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
  // The sparkline holds checkpoint step 3 (steps 1-4): one long drop, the 60 ms stall.
  const std::string spark = pattern_sparkline(r);
  EXPECT_EQ(r.report["utilization"]["sparkline"]["first_step"], 1) << r.log;
  std::size_t longest = 0, run = 0;
  for (char c : spark) longest = std::max(longest, run = c == ' ' ? run + 1 : 0);
  EXPECT_GE(longest, 5u) << r.log;
}

TEST(PatternScenario, LaggingNode) {
  const Result r = run_scenario({kWorkload, {"--stall", "2:30", "--stall", "3:30"}, {}, kTwoHosts});
  EXPECT_EQ(r.report["pattern"]["row"], "lagging") << r.report["pattern"].dump() << r.log;
  EXPECT_NE(pattern_line(r).find("one node lagging the rest — node node-b (2 ranks)"),
            std::string::npos)
      << r.log;
}

std::vector<std::string> every_rank(const std::string& key_value) {
  std::vector<std::string> out;
  for (int rank = 0; rank < 4; ++rank) {
    out.insert(out.end(), {"--env-rank", std::to_string(rank), key_value});
  }
  return out;
}

TEST(PatternScenario, DropsCorrelatedWithCollectives) {
  // A 1 GB/s fabric: each 25 MiB bucket takes 26 ms, the four ~105 ms on the comm stream, of which
  // backward (45 ms after the first bucket is ready) hides less than half; the optimizer waits
  // for the rest: ~60 ms of a ~160 ms step is exposed transfer on every rank.
  const Result r = run_scenario({kWorkload, {}, {}, every_rank("FAKE_NCCL_GBPS=1")});
  EXPECT_EQ(r.report["pattern"]["row"], "collective-drops") << r.report["pattern"].dump() << r.log;
  EXPECT_GE(r.report["pattern"]["comm_drop_pct"].get<double>(), 25.0) << r.report["pattern"];
  EXPECT_LE(r.report["pattern"]["comm_drop_pct"].get<double>(), 50.0) << r.report["pattern"];
  EXPECT_NE(pattern_line(r).find("drops correlated with collectives"), std::string::npos) << r.log;
  for (const json& b : r.report["breakdown"]) {
    EXPECT_GE(b["exposed_transfer_us"].get<double>(), 40'000) << b.dump();
    EXPECT_NEAR(b["compute_us"].get<double>(), 100'000, 3000) << b.dump();
  }
}

TEST(PatternScenario, FlatLowUtilizationFromTinyKernels) {
  // 50 forward and 50 backward kernels of 20 us, each after 40 us of host work (the framework's
  // per-op overhead): the GPU waits on the host between every two kernels, every step alike —
  // busy ~50 %, the idle spread between kernels rather than at the step boundary. Small buckets
  // keep the communication out of the picture.
  const Result r =
      run_scenario({{"--layers", "50", "--fwd-us", "1000", "--bwd-us", "1000", "--opt-us", "20",
                     "--bucket-mb", "1", "--launch-us", "40", "--nvtx"},
                    {},
                    {},
                    kTwoHosts});
  EXPECT_EQ(r.report["pattern"]["row"], "flat-low") << r.report["pattern"].dump() << r.log;
  const double smi = r.report["pattern"]["smi_util_pct"].get<double>();
  EXPECT_GE(smi, 40.0) << r.report["pattern"];
  EXPECT_LE(smi, 60.0) << r.report["pattern"];
  EXPECT_NE(pattern_line(r).find("flat, steady low utilization"), std::string::npos) << r.log;
  // The median compute kernel is one of the 20 us ones.
  EXPECT_NE(pattern_line(r).find("of median 20 µs"), std::string::npos) << r.log;
  for (const json& b : r.report["breakdown"]) {
    // Every NVTX step found (back-to-back ranges), each with its 101 compute kernels.
    EXPECT_EQ(b["steps"], 11) << b.dump();
    EXPECT_NEAR(b["compute_kernels"].get<double>(), 101.0, 0.5) << b.dump();
    EXPECT_GT(b["idle_other_us"].get<double>(), b["idle_step_boundary_us"].get<double>())
        << b.dump();
  }
}

// Ranks 0 and 2 on node-a, 1 and 3 on node-b: tensor-parallel pairs {0,1} and {2,3} span nodes.
const std::vector<std::string> kInterleavedHosts = {
    "--env-rank", "0", "NCCLWATCH_HOST=node-a", "--env-rank", "1", "NCCLWATCH_HOST=node-b",
    "--env-rank", "2", "NCCLWATCH_HOST=node-a", "--env-rank", "3", "NCCLWATCH_HOST=node-b"};
// 16 layers, one 512 KiB tensor-parallel all-reduce after each forward and backward kernel: 32
// per step on each pair's comm, next to DDP's 4 gradient buckets on the world comm.
const std::vector<std::string> kTensorParallel = {
    "--layers", "16",          "--fwd-us", "30000",  "--bwd-us", "60000", "--opt-us",
    "10000",    "--bucket-mb", "25",       "--nvtx", "--tp",     "2"};

std::vector<json> tensor_parallel_like(const Result& r) {
  std::vector<json> out;
  for (const json& c : r.report["cross_node_comms"]) {
    if (c["tensor_parallel_like"].get<bool>()) out.push_back(c);
  }
  return out;
}

TEST(PatternScenario, TensorParallelCommAcrossNodes) {
  const Result r = run_scenario({kTensorParallel, {}, {}, kInterleavedHosts});
  // Both pairs' comms span the two nodes and carry 32 small all-reduces per step; the world
  // comm spans them too but carries DDP's 4 buckets, overlapped with backward: not flagged.
  const std::vector<json> tp = tensor_parallel_like(r);
  ASSERT_EQ(tp.size(), 2u) << r.report["cross_node_comms"].dump() << r.log;
  for (const json& c : tp) {
    EXPECT_EQ(c["nranks"], 2);
    EXPECT_EQ(c["hosts"], 2);
    EXPECT_EQ(c["what"], "all-reduces");
    EXPECT_NEAR(c["per_step"].get<double>(), 32.0, 1.0) << c.dump();
    EXPECT_EQ(c["median_bytes"], 512 * 1024);
  }
  EXPECT_EQ(r.report["cross_node_comms"].size(), 3u) << r.report["cross_node_comms"].dump();
  std::size_t lines = 0;
  for (std::size_t at = r.log.find("keep tensor parallelism inside a node");
       at != std::string::npos; at = r.log.find("keep tensor parallelism inside a node", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u) << r.log;
  EXPECT_NE(r.log.find("(2 ranks, 2 nodes) carries 32 small all-reduces per step"),
            std::string::npos)
      << r.log;
}

TEST(PatternScenario, TensorParallelCommInsideNodesIsNotFlagged) {
  // The same job with the pairs placed on one node each: only the world comm crosses nodes.
  const Result r = run_scenario({kTensorParallel, {}, {}, kTwoHosts});
  EXPECT_TRUE(tensor_parallel_like(r).empty()) << r.report["cross_node_comms"].dump();
  ASSERT_EQ(r.report["cross_node_comms"].size(), 1u) << r.report["cross_node_comms"].dump();
  EXPECT_EQ(r.report["cross_node_comms"][0]["nranks"], 4);
  EXPECT_EQ(r.log.find("keep tensor parallelism inside a node"), std::string::npos) << r.log;
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

#include "demo/scenarios.h"

#include <fmt/format.h>

#include "ncclwatch/settings_table.h"

namespace ncclwatch::demo {

namespace {

using Args = std::vector<std::string>;

// 10x fake_train's defaults (as tests/scenarios): forward 30 ms, backward 60 ms in 8 kernels,
// optimizer 10 ms, 4 buckets of 25 MiB (2.6 ms each on the fake 10 GB/s fabric): a ~103 ms step,
// large next to the noise of a busy laptop. NVTX "step" ranges mark the steps.
const Args kWorkload = {"--fwd-us", "30000",       "--bwd-us", "60000",  "--opt-us",
                        "10000",    "--bucket-mb", "25",       "--nvtx", "--virtual-host"};

// Ranks on simulated hosts: the host names say SIMULATED in every output that names a host (the
// report's tables, the trace files, the exported timeline's process names).
Args hosts(const char* a, const char* b, const char* c, const char* d) {
  Args out;
  const char* per_rank[kRanks] = {a, b, c, d};
  for (int rank = 0; rank < kRanks; ++rank) {
    out.insert(out.end(), {"--env-rank", std::to_string(rank),
                           fmt::format("{}=simulated-{}", settings::name(settings::Id::kHost),
                                       per_rank[rank])});
  }
  return out;
}

Args two_hosts() {
  return hosts("a", "a", "b", "b");
}

Args with(Args base, const Args& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

Args every_rank(const char* option, const std::string& value) {
  Args out;
  for (int rank = 0; rank < kRanks; ++rank)
    out.insert(out.end(), {option, fmt::format("{}:{}", rank, value)});
  return out;
}

Args checkpoint_stalls() {
  Args out;
  for (int step : {3, 7, 11}) {
    const Args one = every_rank("--stall-step", fmt::format("{}:60", step));
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

std::vector<Scenario> make_scenarios() {
  std::vector<Scenario> s;
  s.push_back({"healthy",
               "nothing wrong: 100 ms of compute per step, the all-reduces hidden behind backward",
               Program::kTrain, kWorkload, two_hosts()});
  s.push_back({"sawtooth",
               "every rank waits 30 ms for its next batch before each step (a DataLoader that "
               "cannot keep up)",
               Program::kTrain, with(kWorkload, every_rank("--stall", "30")), two_hosts()});
  s.push_back({"checkpoint", "every rank stops 60 ms every 4th step (a checkpoint save)",
               Program::kTrain, with(kWorkload, checkpoint_stalls()), two_hosts(), 13});
  s.push_back({"straggler", "rank 2's GPU computes 30% slower than its peers' (clocks, thermals)",
               Program::kTrain, with(kWorkload, {"--slow", "2:1.3"}), two_hosts()});
  s.push_back({"slow-node", "both ranks of simulated-b stall 30 ms on the host before every step",
               Program::kTrain, with(kWorkload, {"--stall", "2:30", "--stall", "3:30"}),
               two_hosts()});
  s.push_back({"fabric",
               "the network moves 1 GB/s instead of 10: every all-reduce takes 10x longer",
               Program::kTrain, kWorkload, with(two_hosts(), {"--env", "FAKE_NCCL_GBPS=1"})});
  s.push_back({"flat-low",
               "100 tiny kernels of 20 us per step, each launched after 40 us of host work "
               "(launch-bound)",
               Program::kTrain,
               {"--layers", "50", "--fwd-us", "1000", "--bwd-us", "1000", "--opt-us", "20",
                "--bucket-mb", "1", "--launch-us", "40", "--nvtx", "--virtual-host"},
               two_hosts()});
  s.push_back({"tp-across-nodes",
               "tensor-parallel pairs {0,1} and {2,3} each span both nodes: 32 small all-reduces "
               "per step cross the network",
               Program::kTrain, with(kWorkload, {"--layers", "16", "--tp", "2"}),
               hosts("a", "b", "a", "b")});
  s.push_back({"hang",
               "rank 1 stops calling NCCL at step 3 (stuck on the host); the others wait in the "
               "next all-reduce until NCCL's timeout (2 s here) ends the job",
               Program::kRank,
               {"--colls", "2", "--spin", "1:2"},
               with(two_hosts(), {"--env", "FAKE_NCCL_TIMEOUT_S=2"}),
               5,
               true});
  return s;
}

}  // namespace

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> all = make_scenarios();
  return all;
}

const Scenario* find_scenario(std::string_view name) {
  for (const Scenario& s : scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

namespace {
constexpr std::string_view kDemoJobPrefix = "SIMULATED-demo-";
}  // namespace

std::string demo_job_id(const Scenario& s) {
  return fmt::format("{}{}", kDemoJobPrefix, s.name);
}

std::string simulated_line(const Scenario& s) {
  return fmt::format(
      "SIMULATED job (ncclwatch demo {}): {} ranks on 2 simulated hosts running the stand-in "
      "NCCL/CUDA/CUPTI libraries bundled with ncclwatch, no GPU; injected: {}",
      s.name, kRanks, s.injected);
}

std::string simulated_line_of_job(std::string_view job) {
  if (job.substr(0, kDemoJobPrefix.size()) != kDemoJobPrefix) return "";
  const std::string_view name = job.substr(kDemoJobPrefix.size());
  if (const Scenario* s = find_scenario(name)) return simulated_line(*s);
  return fmt::format(
      "SIMULATED job (ncclwatch demo, job {}): recorded on the stand-in NCCL/CUDA/CUPTI "
      "libraries bundled with ncclwatch, no GPU",
      job);
}

std::vector<std::string> scenario_lines() {
  std::vector<std::string> out;
  for (const Scenario& s : scenarios())
    out.push_back(fmt::format("  {:<16} {}", s.name, s.injected));
  return out;
}

}  // namespace ncclwatch::demo

// `ncclwatch diff` end to end on real multi-process jobs over the fakes: a healthy 4-rank job on
// 2 hosts as BASE, and the same job with one injected cause as NEW (a 1 GB/s fabric, a slow GPU,
// a data-loader stall; then faster compute under the stall, the bf16 case). BASE and NEW are
// given as trace directories and as the report JSONs `run --json` wrote; the first line of
// the diff must name the cause, the exit status say regression (3) or not (0).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "scenario_run.h"

namespace ncclwatch::scenarios {
namespace {

const std::vector<std::string> kWorkload = {
    "--fwd-us", "30000", "--bwd-us", "60000", "--opt-us", "10000", "--bucket-mb", "25", "--nvtx"};
const std::vector<std::string> kTwoHosts = {
    "--env-rank", "0", "NCCLWATCH_HOST=node-a", "--env-rank", "1", "NCCLWATCH_HOST=node-a",
    "--env-rank", "2", "NCCLWATCH_HOST=node-b", "--env-rank", "3", "NCCLWATCH_HOST=node-b"};

struct Diff {
  int rc = -1;
  std::string out;
  nlohmann::json json;  // --json
  std::string first_line() const { return out.substr(0, out.find('\n')); }
  // Every flagged figure or finding is one of `allowed` (key prefixes): nothing beyond the cause.
  void expect_only(const std::vector<std::string>& allowed) const {
    ASSERT_TRUE(json.is_object()) << out;
    for (const auto& key : json["flagged"]) {
      const std::string k = key.get<std::string>();
      bool ok = false;
      for (const auto& a : allowed) ok = ok || k.rfind(a, 0) == 0;
      EXPECT_TRUE(ok) << "flagged beyond the injected cause: " << k << "\n" << out;
    }
  }
};

Diff diff(const std::string& base, const std::string& now, const std::string& extra = "") {
  // In this process's private scenario directory (not a predictable name in /tmp).
  const std::string stem = scenario_root() + "/diff";
  const std::string cmd = std::string(NCCLWATCH_EXE) + " diff --no-progress " + base + " " + now +
                          " --json " + stem + ".json " + extra + " > " + stem + ".txt 2>&1";
  Diff d;
  std::remove((stem + ".json").c_str());
  const int status = std::system(cmd.c_str());
  d.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(stem + ".txt");
  d.out.assign(std::istreambuf_iterator<char>(f), {});
  std::ifstream j(stem + ".json");
  if (j) d.json = nlohmann::json::parse(j, nullptr, false);
  return d;
}

Result job(std::vector<std::string> train_args, std::vector<std::string> env = {},
           std::vector<std::string> workload = kWorkload) {
  std::vector<std::string> launcher = kTwoHosts;
  for (const std::string& kv : env) {
    for (int rank = 0; rank < 4; ++rank)
      launcher.insert(launcher.end(), {"--env-rank", std::to_string(rank), kv});
  }
  return run_scenario({workload, std::move(train_args), {}, launcher, 12});
}

class DiffScenario : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { base_ = new Result(job({})); }
  static void TearDownTestSuite() {
    delete base_;
    base_ = nullptr;
  }
  static const Result& base() { return *base_; }
  static std::string base_json() { return base_->dir + "/report.json"; }

 private:
  static Result* base_;
};
Result* DiffScenario::base_ = nullptr;

TEST_F(DiffScenario, TheSameJobAgainIsNoChange) {
  const Result again = job({});
  const Diff d = diff(base().dir, again.dir);
  EXPECT_EQ(d.rc, 0) << d.out;
  EXPECT_EQ(d.first_line().rfind("no significant change: step time", 0), 0u) << d.out;
  EXPECT_EQ(d.out.find("\n* "), std::string::npos) << d.out;  // no row flagged
  d.expect_only({});
}

TEST_F(DiffScenario, SlowFabric) {
  const Result slow = job({}, {"FAKE_NCCL_GBPS=1"});
  const std::string html = slow.dir + "/diff.html";
  const Diff d = diff(base_json(), slow.dir + "/report.json", "--html " + html);
  EXPECT_EQ(d.rc, 3) << d.out;
  EXPECT_EQ(d.first_line().rfind("step time +", 0), 0u) << d.out;
  EXPECT_NE(d.first_line().find(": exposed communication +"), std::string::npos) << d.out;
  EXPECT_NE(d.first_line().find("all-reduce busbw"), std::string::npos) << d.out;
  EXPECT_NE(d.first_line().find("compute unchanged"), std::string::npos) << d.out;
  const nlohmann::json& j = d.json;
  ASSERT_TRUE(j.is_object()) << d.out;
  d.expect_only({"step", "exposed_transfer", "busbw:", "bucket_", "pattern"});
  EXPECT_EQ(j["verdict"], d.first_line());
  EXPECT_TRUE(j["regression"].get<bool>());
  EXPECT_EQ(j["base"]["kind"], "report JSON");
  std::ifstream hf(html);
  const std::string page((std::istreambuf_iterator<char>(hf)), {});
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(page.find("http"), std::string::npos);  // nothing fetched from the network
}

TEST_F(DiffScenario, SlowGpu) {
  const Result slow = job({"--slow", "2:1.3"});
  const Diff d = diff(base().dir, slow.dir);
  EXPECT_EQ(d.rc, 3) << d.out;
  EXPECT_NE(d.first_line().find("waiting for a late peer +"), std::string::npos) << d.out;
  EXPECT_NE(d.first_line().find("rank 2 (node-b) late in NEW only: slow GPU"), std::string::npos)
      << d.out;
  EXPECT_NE(d.first_line().find("only on rank 2 (node-b)"), std::string::npos) << d.out;
  // Its peers wait for it, their transfers now start under its compute: consequences.
  d.expect_only(
      {"step", "exposed_", "compute", "kernel:", "straggler:rank 2", "bucket_", "pattern"});
}

TEST_F(DiffScenario, DataLoaderStall) {
  const Result stalled =
      job({"--stall", "0:30", "--stall", "1:30", "--stall", "2:30", "--stall", "3:30"});
  const Diff d = diff(base().dir, stalled.dir + "/report.json");
  EXPECT_EQ(d.rc, 3) << d.out;
  // The 30 ms sleep less the 2.6 ms of the last bucket's transfer it now hides.
  EXPECT_NE(d.first_line().find(": GPU idle at the step boundary +27."), std::string::npos)
      << d.out;
  EXPECT_NE(d.first_line().find("pattern healthy → dataloader"), std::string::npos) << d.out;
  // The sleep hides the last bucket's transfer now.
  d.expect_only({"step", "idle_step_boundary", "exposed_transfer", "bucket_", "pattern"});
}

TEST_F(DiffScenario, FasterComputeUnderTheStall) {
  const std::vector<std::string> stall = {"--stall", "0:30", "--stall", "1:30",
                                          "--stall", "2:30", "--stall", "3:30"};
  const Result fp32 = job(stall);
  const Result bf16 = job(stall, {},
                          {"--fwd-us", "15000", "--bwd-us", "30000", "--opt-us", "5000",
                           "--bucket-mb", "25", "--nvtx"});
  const Diff d = diff(fp32.dir, bf16.dir);
  EXPECT_EQ(d.rc, 0) << d.out;
  EXPECT_EQ(d.first_line().rfind("step time -", 0), 0u) << d.out;
  EXPECT_NE(d.first_line().find(": compute -50.0 ms/step"), std::string::npos) << d.out;
  EXPECT_NE(d.first_line().find("; idle at the step boundary did not change (27."),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.first_line().find("ms/step) but is now 3"), std::string::npos) << d.out;
  d.expect_only({"step", "compute", "kernel:", "exposed_", "bucket_"});
}

TEST(DiffCli, UsageAndUnusableInputs) {
  EXPECT_EQ(diff("", "").rc, 2);
  const Diff missing = diff("/nonexistent/base", "/nonexistent/new");
  EXPECT_EQ(missing.rc, 1) << missing.out;
  EXPECT_EQ(missing.out.rfind("ncclwatch: ", 0), 0u) << missing.out;
}

}  // namespace
}  // namespace ncclwatch::scenarios

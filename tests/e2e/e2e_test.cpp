// End-to-end: the CLI runs 4-rank jobs of fake_rank over the fake NCCL with libncclwatch.so
// preloaded, then the report (text and JSON) must state what the scenario built in: a clean
// run, a rank killed while the others hang, a desync, two hosts with a skewed clock, a truncated
// trace file.
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ncclwatch/format.h"
#include "process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using ncclwatch::test_support::slurp;
using Result = ncclwatch::test_support::CommandResult;

class E2e : public ::testing::Test {
 protected:
  // Runs a shell command line with stdout/stderr captured. The report's findings are read as
  // one line each: no wrapping to a width.
  Result sh(const std::string& cmd) {
    return ncclwatch::test_support::run_shell("export COLUMNS=100000; " + cmd, root_);
  }

  Result run(const std::string& env, const std::string& launcher_and_rank) {
    // A job id of our own: leftover segments of other tests are not this job's.
    return sh(env + " " + NCCLWATCH_CLI + " run --job e2e-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + " --dir " +
              dir_.string() + " --json " + json_path().string() + " -- " + launcher_and_rank);
  }

  // Per all-reduce instance of the traces in dir_, in true time (the readings of `skewed_host`
  // minus `skew_ns`): how far after the last member's entry each host's median member returned
  // (the later of the hosts), the bound on that instance's clock sample (see the test below).
  std::vector<int64_t> exit_windows_ns(const std::string& skewed_host, int64_t skew_ns) {
    struct Instance {
      int64_t last_entry = 0;
      std::map<std::string, std::vector<int64_t>> exits;  // per host
    };
    std::map<std::pair<std::string, int64_t>, Instance> instances;  // (comm, seq)
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() != ".trace") continue;
      const Result d =
          sh(std::string(NCCLWATCH_CLI) + " dump --header --kinds call " + e.path().string());
      EXPECT_EQ(d.rc, 0) << d.err;
      std::istringstream in(d.out);
      std::string line;
      if (!std::getline(in, line)) continue;
      const std::string host = json::parse(line)["host"];
      const int64_t shift = host == skewed_host ? skew_ns : 0;
      while (std::getline(in, line)) {
        const json c = json::parse(line);
        if (c["func"] != "all_reduce") continue;
        Instance& i = instances[{c["comm_id"].get<std::string>(), c["seq"].get<int64_t>()}];
        i.last_entry = std::max(i.last_entry, c["t_enter_ns"].get<int64_t>() - shift);
        i.exits[host].push_back(c["t_exit_ns"].get<int64_t>() - shift);
      }
    }
    std::vector<int64_t> w;
    for (auto& [key, i] : instances) {
      int64_t latest_median = 0;
      for (auto& [host, t] : i.exits) {
        std::sort(t.begin(), t.end());
        latest_median = std::max(latest_median, t[(t.size() - 1) / 2] / 2 + t[t.size() / 2] / 2);
      }
      w.push_back(latest_median - i.last_entry);
    }
    return w;
  }

  fs::path json_path() const { return root_ / "report.json"; }
  json report_json() const {
    std::ifstream in(json_path());
    return json::parse(in);
  }

  ncclwatch::test_support::TempDir tmp_{"ncclwatch_e2e"};
  fs::path root_ = tmp_.path(), dir_ = root_ / "traces";
};

const std::string kLauncher4 = std::string(FAKE_LAUNCHER) + " --nproc 4";

TEST_F(E2e, CleanRunMatchesEveryInstanceAndReportAgrees) {
  Result r = run("", kLauncher4 + " -- " + FAKE_RANK + " --steps 5 --colls 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("4 ranks, 1 comm: all 10 instances matched on every rank"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("CRITICAL"), std::string::npos) << r.out;
  json j = report_json();
  EXPECT_EQ(j["schema_version"], 1);
  ASSERT_EQ(j["ranks"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(j["ranks"][i]["rank"], i);
    EXPECT_EQ(j["ranks"][i]["calls"], 10);
    EXPECT_EQ(j["ranks"][i]["dropped"], 0);
    EXPECT_GT(j["ranks"][i]["pid"].get<int64_t>(), 0);
  }
  ASSERT_EQ(j["comms"].size(), 1u);
  EXPECT_EQ(j["comms"][0]["nranks"], 4);
  EXPECT_EQ(j["comms"][0]["ranks"], json::array({0, 1, 2, 3}));
  EXPECT_EQ(j["comms"][0]["id"].get<std::string>().size(), 18u);  // 0x + 16 hex digits
  EXPECT_TRUE(j["incomplete"].empty());
  EXPECT_TRUE(j["desync"].empty());
  // `ncclwatch report DIR` on the same traces prints the same report.
  Result again = sh(std::string(NCCLWATCH_CLI) + " report " + dir_.string());
  // Exit 0, or 3 if a warning was printed: a host-only run on a loaded machine may show one
  // (timing noise); what this test holds is that both commands print the same report.
  const bool warns = r.out.rfind("WARNING", 0) == 0 || r.out.find("\nWARNING") != std::string::npos;
  ASSERT_EQ(again.rc, warns ? 3 : 0) << again.err << again.out;
  EXPECT_EQ(again.out, r.out);
}

TEST_F(E2e, RankKilledWhileTheOthersHangIsNamedMissing) {
  // Rank 2 SIGKILLs itself at the start of step 3 (after collectives #0-#5); the others enter
  // #6 and wait until the fake NCCL's barrier times out.
  Result r = run("FAKE_NCCL_TIMEOUT_S=1", std::string("sh ") + PLAIN_LAUNCH + " " + FAKE_RANK +
                                              " --steps 5 --colls 2 --exit 2:3:kill");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("salvaged (rank 2"), std::string::npos) << r.err;
  // The verdict comes first; the fake NCCL's timeout made the waiting calls return, so it rests on
  // the last incomplete instance.
  EXPECT_EQ(r.out.rfind("CRITICAL [hang] job hung in all_reduce #6 on comm 0x", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("CRITICAL [collector] rank 2 never entered all_reduce #6 on comm 0x"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("; ranks 0-1,3 waited there"), std::string::npos) << r.out;
  json j = report_json();
  ASSERT_EQ(j["incomplete"].size(), 1u);
  EXPECT_EQ(j["incomplete"][0]["seq"], 6);
  EXPECT_EQ(j["incomplete"][0]["op"], "all_reduce");
  EXPECT_EQ(j["incomplete"][0]["missing_ranks"], json::array({2}));
  EXPECT_EQ(j["ranks"][2]["calls"], 6);  // every record up to the kill
  EXPECT_EQ(j["ranks"][2]["salvaged"], true);
  EXPECT_EQ(j["comms"][0]["instances"], 6);
  EXPECT_EQ(j["hang"]["seq"], 6);
  EXPECT_EQ(j["hang"]["missing_ranks"], json::array({2}));
  EXPECT_EQ(j["hang"]["waiting_ranks"], json::array({0, 1, 3}));
}

TEST_F(E2e, DesyncOfOneRanksCount) {
  Result r = run("FAKE_NCCL_TIMEOUT_S=2",
                 kLauncher4 + " -- " + FAKE_RANK + " --steps 3 --colls 2 --desync 1:1");
  json j = report_json();
  ASSERT_FALSE(j["desync"].empty()) << r.out;
  EXPECT_EQ(j["desync"][0]["seq"], 2);  // step 1's first collective
  EXPECT_EQ(j["desync"][0]["ranks"], json::array({1}));
  EXPECT_EQ(j["desync"][0]["what"], "count 1025 vs 1024 (majority)");
  EXPECT_NE(r.out.find("CRITICAL [collector] desync on comm 0x"), std::string::npos) << r.out;
}

TEST_F(E2e, TwoHostsWithASkewedClockAreAligned) {
  // Ranks 2 and 3 on "nodeB", whose clock reads 500 ms ahead (wall clock included, so NTP
  // anchors cannot see it): the matched collectives must.
  const int64_t skew_ns = 500'000'000;
  std::string launcher = kLauncher4 + " --env NCCLWATCH_HOST=nodeA";
  for (int r : {2, 3}) {
    launcher += " --env-rank " + std::to_string(r) + " NCCLWATCH_HOST=nodeB --env-rank " +
                std::to_string(r) + " NCCLWATCH_TEST_CLOCK_OFFSET_NS=" + std::to_string(skew_ns);
  }
  Result r = run("", launcher + " -- " + FAKE_RANK + " --steps 20 --colls 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  json j = report_json();
  const json& offsets = j["clock"]["offsets"];
  ASSERT_EQ(offsets.size(), 2u) << j["clock"].dump();
  EXPECT_EQ(offsets[0]["host"], "nodeA");
  EXPECT_EQ(offsets[1]["host"], "nodeB");
  EXPECT_EQ(offsets[1]["method"], "host-exit");
  // The bound comes from the fake's timing, not from the estimator: its barrier returns no rank
  // before the last one entered, so in true time (nodeB's readings minus the known skew) each
  // host's median member exit of an instance lies in [last entry, last entry + w], w = how far
  // after the last entry the later of the two median members returned; the instance's clock
  // sample (host A's median member exit minus host B's) is within w of the truth. With W = the
  // 60th percentile of w, more than half the samples are within W, so their median is; after the
  // estimator's outlier rejection (keep samples within L of that median) the median of the rest
  // is within W when L >= 2W, else within W + L < 3W. So |error| <= 3W. On an idle machine W is
  // tens of us; ranks descheduled under load return late, widening w of the instances they delay.
  std::vector<int64_t> w = exit_windows_ns("nodeB", skew_ns);
  ASSERT_GE(w.size(), 30u);
  std::sort(w.begin(), w.end());
  const double w60_us = static_cast<double>(w[(w.size() * 6 + 9) / 10 - 1]) / 1000.0;
  const double bound_us = 3 * w60_us + 1;  // + 1 us: the report's microsecond rounding
  // A bound as wide as the skew would pass an estimator that did nothing: the skew (500 ms) is far
  // above what W reaches with a CPU hog on every core (W60 of 10 ms, a 30 ms bound).
  ASSERT_LT(bound_us, skew_ns / 2000.0) << "exit windows too wide to judge: W60 " << w60_us;
  EXPECT_NEAR(offsets[1]["offset_us"].get<double>(), -skew_ns / 1000.0, bound_us)
      << j["clock"].dump() << " W60 " << w60_us << " us";
  EXPECT_GE(offsets[1]["samples"].get<int>(), 10);
  EXPECT_EQ(j["ranks"][2]["clock_offset_us"], offsets[1]["offset_us"]);
  EXPECT_NE(r.out.find("== Clocks"), std::string::npos);
}

TEST_F(E2e, TwoHostsAlignedFromGpuKernelEnds) {
  // fake_train on the fake GPU (CUPTI mode): the ends of the all-reduce kernels are simultaneous,
  // so the second host's 3 ms skew is recovered from them, within 100 us (stated tolerance).
  const int64_t skew_ns = 3'000'000;
  std::string launcher = kLauncher4 + " --env NCCLWATCH_HOST=nodeA";
  for (int r : {2, 3}) {
    launcher += " --env-rank " + std::to_string(r) + " NCCLWATCH_HOST=nodeB --env-rank " +
                std::to_string(r) + " NCCLWATCH_TEST_CLOCK_OFFSET_NS=" + std::to_string(skew_ns);
  }
  Result r = run("", launcher + " -- " + FAKE_TRAIN + " --steps 4");
  ASSERT_EQ(r.rc, 0) << r.err;
  json j = report_json();
  const json& offsets = j["clock"]["offsets"];
  ASSERT_EQ(offsets.size(), 2u) << j["clock"].dump();
  EXPECT_EQ(offsets[1]["method"], "gpu-kernel-end");
  EXPECT_NEAR(offsets[1]["offset_us"].get<double>(), -skew_ns / 1000.0, 100.0) << j["clock"].dump();
  EXPECT_EQ(j["ranks"][0]["timing"], "cupti");
  EXPECT_EQ(j["ranks"][0]["gpu_timed"], j["ranks"][0]["calls"]);
}

TEST_F(E2e, TruncatedTraceFileIsOneLineAndTheRestIsReported) {
  Result r = run("", kLauncher4 + " -- " + FAKE_RANK + " --steps 5 --colls 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  // Cut rank 1's file in the middle of a record, a few records before its end.
  fs::path victim;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().extension() != ".trace") continue;
    json j = report_json();
    for (const auto& rank : j["ranks"]) {
      if (rank["rank"] == 1 && rank["source"] == e.path().string()) victim = e.path();
    }
  }
  ASSERT_FALSE(victim.empty());
  // In the middle of its last call record (records of other kinds follow it: the comm's
  // destruction, the exit's scheduling sample and clock anchor).
  std::ifstream in(victim, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::size_t last_call = 0;
  for (std::size_t at = sizeof(ncclwatch::format::TraceHeader); at + 64 <= bytes.size(); at += 64) {
    if (bytes[at] == static_cast<char>(ncclwatch::format::RecordKind::kCall)) last_call = at;
  }
  ASSERT_GT(last_call, 0u);
  fs::resize_file(victim, last_call + 20);
  Result rep = sh(std::string(NCCLWATCH_CLI) + " report " + dir_.string() + " --json " +
                  json_path().string());
  // Exit 3: the cut trace is a warning, and the instance it lost is named (README, "Exit codes").
  ASSERT_EQ(rep.rc, 3) << rep.err << rep.out;
  EXPECT_NE(rep.out.find("WARNING  [collector] rank 1: trace not closed"), std::string::npos)
      << rep.out;
  json j = report_json();
  ASSERT_EQ(j["ranks"].size(), 4u);
  ASSERT_FALSE(j["problems"].empty());
  EXPECT_NE(j["problems"][0]["source"].get<std::string>().find(victim.filename().string()),
            std::string::npos);
  EXPECT_LT(j["ranks"][1]["calls"].get<int>(), 10);
  EXPECT_GT(j["ranks"][1]["calls"].get<int>(), 0);
  EXPECT_NE(rep.out.find("== Input problems"), std::string::npos) << rep.out;
  // The other ranks' instances are all there.
  EXPECT_EQ(j["ranks"][0]["calls"], 10);
}

TEST_F(E2e, CommandsExitCodeIsPassedOn) {
  Result r = run("", "sh -c 'exit 7'");
  EXPECT_EQ(r.rc, 7);
  EXPECT_NE(r.err.find("the job made no NCCL call"), std::string::npos) << r.err;
}

TEST_F(E2e, ReportOfAMissingDirectoryFailsWithOneLine) {
  Result r = sh(std::string(NCCLWATCH_CLI) + " report " + (root_ / "nope").string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("nope: No such file or directory"), std::string::npos) << r.err;
}

}  // namespace

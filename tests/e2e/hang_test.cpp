// Hangs end to end: 4 fake_rank processes with libncclwatch.so preloaded, over the fake NCCL
// whose collectives block until every rank arrives (FAKE_NCCL_TIMEOUT_S set far beyond the test,
// so they stay blocked). While they hang, `ncclwatch status` must name the missing rank and the
// collective; the watchdog must say so once; after the ranks are killed, `ncclwatch collect` and
// `ncclwatch report` must open with the hang verdict (comm, op, seq, waiting and missing ranks).
// Everything is polled with generous deadlines (a loaded 2-core machine), and every child is
// killed at the end.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <thread>
#include <vector>
#include "ncclwatch/format.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr auto kDeadline = std::chrono::seconds(150);

using ncclwatch::test_support::slurp;
using Result = ncclwatch::test_support::CommandResult;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class Hang : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = root_ / "traces";
    rdzv_ = root_ / "rdzv";
    fs::create_directories(rdzv_);
    // Job ids are cut to 63 characters by the shim: keep it short and unique.
    job_ =
        "hang-" + std::to_string(getpid()) + "-" +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()).substr(0, 24);
  }
  void TearDown() override {
    kill_ranks();
    // Whatever a failed test left in /dev/shm of this job.
    sh(std::string(NCCLWATCH_CLI) + " collect --job " + job_ + " --dir " + dir_.string());
  }

  void start_ranks(const std::string& args, const std::vector<std::string>& env = {}) {
    for (int r = 0; r < 4; ++r) {
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        const std::string out = (root_ / ("rank" + std::to_string(r) + ".out")).string();
        const std::string err = (root_ / ("rank" + std::to_string(r) + ".err")).string();
        if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(90);
        setenv("RANK", std::to_string(r).c_str(), 1);
        setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
        setenv("WORLD_SIZE", "4", 1);
        setenv("LOCAL_WORLD_SIZE", "4", 1);
        setenv("FAKE_RDZV_DIR", rdzv_.c_str(), 1);
        setenv("FAKE_NCCL_TIMEOUT_S", "3600", 1);
        setenv("LD_PRELOAD", SHIM_LIBRARY, 1);
        setenv("NCCLWATCH_DIR", dir_.c_str(), 1);
        setenv("NCCLWATCH_JOB", job_.c_str(), 1);
        for (const auto& kv : env) putenv(strdup(kv.c_str()));
        std::vector<std::string> words{FAKE_RANK};
        std::istringstream in(args);
        for (std::string w; in >> w;) words.push_back(w);
        std::vector<char*> argv;
        for (auto& w : words) argv.push_back(w.data());
        argv.push_back(nullptr);
        execv(FAKE_RANK, argv.data());
        _exit(91);
      }
      pids_.push_back(pid);
    }
  }

  void kill_ranks() {
    for (pid_t p : pids_) kill(p, SIGKILL);
    for (pid_t p : pids_) waitpid(p, nullptr, 0);
    pids_.clear();
  }

  // Runs a shell command line with stdout/stderr captured. The report's findings are read as
  // one line each: no wrapping to a width.
  Result sh(const std::string& cmd) {
    return ncclwatch::test_support::run_shell("export COLUMNS=100000; " + cmd, root_);
  }

  // `ncclwatch status` once: its text, and its JSON in `j`.
  Result status(json& j) {
    const fs::path path = root_ / "status.json";
    Result r = sh(std::string(NCCLWATCH_CLI) + " status --job " + job_ + " --dir " + dir_.string() +
                  " --json " + path.string());
    j = json::object();
    if (r.rc == 0) {
      std::ifstream in(path);
      j = json::parse(in, nullptr, false);
    }
    return r;
  }

  // Polls `ncclwatch status` until `done(json)`; the last text for messages.
  bool poll_status(const std::function<bool(const json&)>& done, std::string* last_text) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      json j;
      Result r = status(j);
      *last_text = r.out + r.err;
      if (r.rc == 0 && !j.is_discarded() && done(j)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  bool poll_file(const fs::path& p, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (slurp(p).find(what) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  // Kills the hung ranks (as a batch system would), salvages, reports.
  Result collect_and_report(json& j, std::string* collect_out = nullptr) {
    kill_ranks();
    Result c = sh(std::string(NCCLWATCH_CLI) + " collect --job " + job_);
    EXPECT_EQ(c.rc, 0) << c.out << c.err;
    if (collect_out != nullptr) *collect_out = c.out;
    const fs::path path = root_ / "report.json";
    Result r =
        sh(std::string(NCCLWATCH_CLI) + " report " + dir_.string() + " --json " + path.string());
    std::ifstream in(path);
    j = json::parse(in, nullptr, false);
    return r;
  }

  static const json* comm0(const json& st) {
    return st.contains("comms") && st["comms"].is_array() && st["comms"].size() == 1
               ? &st["comms"][0]
               : nullptr;
  }

  ncclwatch::test_support::TempDir tmp_{"ncclwatch_hang"};
  fs::path root_ = tmp_.path(), dir_, rdzv_;
  std::string job_;
  std::vector<pid_t> pids_;
};

TEST_F(Hang, RankKilledBetweenCollectivesWhileTheOthersBlockInTheNext) {
  // Rank 2 SIGKILLs itself at the start of step 3 (after #0-#5); ranks 0, 1, 3 block in #6.
  start_ranks("--steps 5 --colls 2 --exit 2:3:kill", {"NCCLWATCH_HANG_S=2"});
  std::string text;
  ASSERT_TRUE(poll_status(
      [](const json& st) {
        const json* c = comm0(st);
        return c != nullptr && (*c)["waiting_ranks"] == json::array({0, 1, 3}) &&
               (*c)["behind_ranks"] == json::array({2}) && (*c)["max_entered"] == 6;
      },
      &text))
      << text;
  EXPECT_NE(text.find("=> rank 2 never entered all_reduce #6; ranks 0-1,3 waiting in it"),
            std::string::npos)
      << text;
  // Every rank's loss counters are in the JSON (nothing lost here: no "lost:" line either).
  json now;
  status(now);
  for (const auto& r : now["ranks"]) {
    EXPECT_EQ(r["losses"].size(), 2 + std::size(ncclwatch::format::kLossFields)) << r.dump();
    EXPECT_EQ(r["losses"]["ring_full"], 0) << r.dump();
    EXPECT_EQ(r["losses"]["lite_untimed"], 0) << r.dump();
  }
  EXPECT_EQ(text.find(" lost: "), std::string::npos) << text;

  // Watchdog: one line per waiting rank, once, even after more than twice NCCLWATCH_HANG_S.
  for (int r : {0, 1, 3}) {
    const fs::path err = root_ / ("rank" + std::to_string(r) + ".err");
    ASSERT_TRUE(poll_file(err, "ncclwatch: rank " + std::to_string(r) + " waiting ")) << slurp(err);
  }
  ASSERT_TRUE(poll_status(
      [](const json& st) {
        for (const auto& r : st["ranks"])
          if (r["rank"] == 0 && !r["in_flight"].empty())
            return r["in_flight"][0]["age_s"].get<double>() > 6.0;
        return false;
      },
      &text))
      << text;
  for (int r : {0, 1, 3}) {
    const std::string err = slurp(root_ / ("rank" + std::to_string(r) + ".err"));
    EXPECT_EQ(count_of(err, "ncclwatch: rank"), 1u) << err;
    EXPECT_NE(err.find(" in ncclAllReduce #6 on comm 0x"), std::string::npos) << err;
  }

  json j;
  std::string collected;
  Result rep = collect_and_report(j, &collected);
  EXPECT_NE(collected.find("1 call(s) in flight"), std::string::npos) << collected;
  EXPECT_EQ(rep.out.rfind("CRITICAL [hang] job hung in all_reduce #6 on comm 0x", 0), 0u)
      << rep.out;
  EXPECT_NE(rep.out.find("ranks 0-1,3 waiting"), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("rank 2 never entered it — rank 2: last call all_reduce #5"),
            std::string::npos)
      << rep.out;
  EXPECT_EQ(rep.out.find("no hang"), std::string::npos) << rep.out;
  ASSERT_FALSE(j.is_discarded());
  const json& h = j["hang"];
  EXPECT_EQ(h["op"], "all_reduce");
  EXPECT_EQ(h["seq"], 6);
  EXPECT_EQ(h["comm"], j["comms"][0]["id"]);
  EXPECT_EQ(h["waiting_ranks"], json::array({0, 1, 3}));
  EXPECT_EQ(h["missing_ranks"], json::array({2}));
  EXPECT_EQ(h["evidence"], "entered_never_returned");
  EXPECT_GT(h["since_us"].get<int64_t>(), 0);
  ASSERT_EQ(h["last_call_of_missing"].size(), 1u);
  EXPECT_EQ(h["last_call_of_missing"][0]["rank"], 2);
  EXPECT_EQ(h["last_call_of_missing"][0]["op"], "all_reduce");
  EXPECT_EQ(h["last_call_of_missing"][0]["seq"], 5);
  EXPECT_EQ(h["last_call_of_missing"][0]["process_dead"], true);
  ASSERT_EQ(j["incomplete"].size(), 1u);
  EXPECT_EQ(j["incomplete"][0]["seq"], 6);
  EXPECT_EQ(j["incomplete"][0]["missing_ranks"], json::array({2}));
}

TEST_F(Hang, RankStuckInAHostLoopNeverCallsTheNextCollective) {
  // Rank 1 stops calling NCCL at the start of step 2 (after #0-#3) and stays alive.
  start_ranks("--steps 5 --colls 2 --spin 1:2");
  std::string text;
  ASSERT_TRUE(poll_status(
      [](const json& st) {
        const json* c = comm0(st);
        if (c == nullptr || (*c)["behind_ranks"] != json::array({1}) ||
            (*c)["waiting_ranks"] != json::array({0, 2, 3}))
          return false;
        for (const auto& r : st["ranks"])
          if (r["rank"] == 1)
            return r["state"] == "live" && r["idle_s"].is_number() &&
                   r["idle_s"].get<double>() > 2.5;
        return false;
      },
      &text))
      << text;
  EXPECT_NE(text.find("=> rank 1 never entered all_reduce #4"), std::string::npos) << text;

  json j;
  Result rep = collect_and_report(j);
  EXPECT_EQ(rep.out.rfind("CRITICAL [hang] job hung in all_reduce #4 on comm 0x", 0), 0u)
      << rep.out;
  EXPECT_NE(rep.out.find("host-side — stuck in data loading, a checkpoint, or dead"),
            std::string::npos)
      << rep.out;
  ASSERT_FALSE(j.is_discarded());
  const json& h = j["hang"];
  EXPECT_EQ(h["seq"], 4);
  EXPECT_EQ(h["waiting_ranks"], json::array({0, 2, 3}));
  EXPECT_EQ(h["missing_ranks"], json::array({1}));
  ASSERT_EQ(h["last_call_of_missing"].size(), 1u);
  const json& m = h["last_call_of_missing"][0];
  EXPECT_EQ(m["state"], "host_side");
  EXPECT_EQ(m["seq"], 3);
  EXPECT_GT(m["idle_s"].get<double>(), 1.0);
}

// Capture by itself on a hang (docs/always-on.md): with no window open (NCCLWATCH_CAPTURE=off:
// summaries only), the watchdog of each waiting rank asks for a window of the recent detail it
// still holds; the report's window is that one, named by the watchdog's words, and its analysis is
// still the hang's.
TEST_F(Hang, TheWatchdogCapturesTheRecentDetailByItself) {
  // Rank 2 SIGKILLs itself at the start of step 30 (after #0-#59); ranks 0, 1, 3 block in #60.
  start_ranks("--steps 40 --colls 2 --exit 2:30:kill",
              {"NCCLWATCH_HANG_S=2", "NCCLWATCH_CAPTURE=off"});
  for (int r : {0, 1, 3}) {
    const fs::path err = root_ / ("rank" + std::to_string(r) + ".err");
    ASSERT_TRUE(poll_file(err, "ncclwatch: rank " + std::to_string(r) + " waiting ")) << slurp(err);
  }
  // The request every rank reads (written after the asking rank applied it to itself).
  ASSERT_TRUE(poll_file(dir_ / ("ncclwatch." + job_ + ".capture"), "trigger=hang"));
  json j;
  Result rep = collect_and_report(j);
  EXPECT_EQ(rep.out.rfind("CRITICAL [hang] job hung in all_reduce #60 on comm 0x", 0), 0u)
      << rep.out;
  EXPECT_NE(rep.out.find("triggered by: hang: rank "), std::string::npos) << rep.out;
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["windows"].size(), 1u) << j["windows"].dump();
  const json& w = j["windows"][0];
  EXPECT_EQ(w["trigger"], "hang");
  EXPECT_NE(w["text"].get<std::string>().find(" waiting "), std::string::npos) << w.dump();
  EXPECT_GE(w["ranks"].get<int>(), 1) << w.dump();
  // Never closed (the ranks were killed inside it); what each rank was last doing is in it.
  EXPECT_EQ(w["ranks_closed"], 0);
  ASSERT_FALSE(j["ranks"].empty());
  for (const json& r : j["ranks"]) EXPECT_GT(r["calls"].get<int>(), 10) << r.dump();
  EXPECT_EQ(j["hang"]["seq"], 60);
  EXPECT_EQ(j["hang"]["waiting_ranks"], json::array({0, 1, 3}));
}

TEST_F(Hang, InitHangWhenOneRankNeverCallsCommInitRank) {
  start_ranks("--steps 2 --colls 1 --skip-init 3");
  std::string text;
  ASSERT_TRUE(poll_status(
      [](const json& st) {
        for (const auto& c : st["comms"])
          if (c["in_init_ranks"] == json::array({0, 1, 2}) && c["nranks"] == 4) return true;
        return false;
      },
      &text))
      << text;
  EXPECT_NE(text.find("ranks 0-2 inside its init"), std::string::npos) << text;

  json j;
  Result rep = collect_and_report(j);
  EXPECT_EQ(rep.out.rfind("CRITICAL [hang] job hung in comm_init_rank on comm 0x", 0), 0u)
      << rep.out;
  EXPECT_NE(rep.out.find("rank 3: no trace at all"), std::string::npos) << rep.out;
  ASSERT_FALSE(j.is_discarded());
  const json& h = j["hang"];
  EXPECT_EQ(h["op"], "comm_init_rank");
  EXPECT_EQ(h["comm_size"], 4);
  EXPECT_EQ(h["waiting_ranks"], json::array({0, 1, 2}));
  EXPECT_EQ(h["missing_ranks"], json::array({3}));
  ASSERT_EQ(h["last_call_of_missing"].size(), 1u);
  EXPECT_EQ(h["last_call_of_missing"][0]["has_trace"], false);
}

TEST_F(Hang, GroupEndThatBlocks) {
  // Each step's collectives in one group: ranks 0, 1, 3 block in the ncclGroupEnd of step 3
  // (#6 and #7 queued inside), rank 2 was killed before it.
  start_ranks("--steps 5 --colls 2 --group --exit 2:3:kill");
  std::string text;
  ASSERT_TRUE(poll_status(
      [](const json& st) {
        const json* c = comm0(st);
        if (c == nullptr || (*c)["behind_ranks"] != json::array({2})) return false;
        int in_group_end = 0;
        for (const auto& r : st["ranks"])
          for (const auto& f : r["in_flight"]) in_group_end += f["op"] == "group_end" ? 1 : 0;
        return in_group_end == 3;
      },
      &text))
      << text;

  json j;
  Result rep = collect_and_report(j);
  EXPECT_EQ(rep.out.rfind("CRITICAL [hang] job hung in all_reduce #6 on comm 0x", 0), 0u)
      << rep.out;
  EXPECT_NE(rep.out.find("inside ncclGroupEnd: ranks 0-1,3 waiting"), std::string::npos) << rep.out;
  ASSERT_FALSE(j.is_discarded());
  const json& h = j["hang"];
  EXPECT_EQ(h["seq"], 6);
  EXPECT_EQ(h["via"], "group_end");
  EXPECT_EQ(h["waiting_ranks"], json::array({0, 1, 3}));
  EXPECT_EQ(h["missing_ranks"], json::array({2}));
}

}  // namespace

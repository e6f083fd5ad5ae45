// The exporter scraped by a real Prometheus (Debian's `prometheus`, installed by
// scripts/setup.sh): a 4-rank fake job with a slow rank must be named by a `topk` query and by
// the straggler alert, and a hang must fire the hang alert for the waiting ranks. The rules are
// contrib/prometheus/rules.yml with test-sized windows (20 s instead of minutes, `for: 0s`, 3 s
// instead of 300 s), evaluated every second. Skipped only when no prometheus binary is found.
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "exporter_fixture.h"

namespace ncclwatch::e2e {
namespace {

using nlohmann::json;

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

class Prometheus : public ExporterJob {
 protected:
  void SetUp() override {
    if (std::string(PROMETHEUS_BIN).empty())
      GTEST_SKIP() << "prometheus not found: install Debian's prometheus package "
                      "(scripts/setup.sh does) to run the real-Prometheus tests";
    ExporterJob::SetUp();
  }

  // Starts Prometheus scraping the exporter on `exporter_port` every second, with the test copy
  // of the rules; returns when its API answers.
  void start_prometheus(int exporter_port) {
    std::string rules = slurp(CONTRIB_DIR "/prometheus/rules.yml");
    ASSERT_FALSE(rules.empty());
    rules = std::regex_replace(rules, std::regex(R"(\[(5|10)m\])"), "[20s]");
    rules = std::regex_replace(rules, std::regex(R"(for: \w+)"), "for: 0s");
    rules = std::regex_replace(rules, std::regex(R"(> 300\b)"), "> 3");
    std::ofstream(root_ / "rules.yml") << rules;
    std::ofstream(root_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
        << "rule_files: [" << (root_ / "rules.yml").string() << "]\n"
        << "scrape_configs:\n  - job_name: ncclwatch\n    honor_labels: true\n"
        << "    static_configs: [{targets: ['127.0.0.1:" << exporter_port << "']}]\n";
    for (int attempt = 0; attempt < 3 && port_ == 0; ++attempt) {
      const int port = free_port();
      const pid_t pid =
          spawn({PROMETHEUS_BIN, "--config.file=" + (root_ / "prometheus.yml").string(),
                 "--storage.tsdb.path=" + (root_ / "tsdb").string(),
                 "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                root_ / "prometheus.log");
      const bool ready = poll([&] {
        if (waitpid(pid, nullptr, WNOHANG) == pid) return true;  // exited: port taken?
        return !get(url(port, "/-/ready")).empty();
      });
      if (ready && !get(url(port, "/-/ready")).empty()) port_ = port;
    }
    ASSERT_GT(port_, 0) << slurp(root_ / "prometheus.log");
  }

  static std::string url(int port, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }

  // The `data.result` of an instant query (empty array on any failure).
  json query(const std::string& promql) {
    const fs::path out = root_ / "query.json";
    const std::string cmd = "curl -s -f --max-time 20 -o " + out.string() + " " +
                            url(port_, "/api/v1/query") + " --data-urlencode 'query=" + promql +
                            "'";
    if (sh(cmd) != 0) return json::array();
    json j = json::parse(slurp(out), nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return json::array();
    return j["data"]["result"];
  }

  // Firing alerts named `name` for this test's job: their rank labels.
  std::set<std::string> firing(const std::string& name) {
    std::set<std::string> ranks;
    json j = json::parse(get(url(port_, "/api/v1/alerts")), nullptr, false);
    if (j.is_discarded() || !j.contains("data")) return ranks;
    for (const auto& a : j["data"]["alerts"]) {
      const auto& l = a["labels"];
      if (l.value("alertname", "") == name && l.value("job", "") == job_ &&
          a.value("state", "") == "firing")
        ranks.insert(l.value("rank", ""));
    }
    return ranks;
  }

  int port_ = 0;
};

TEST_F(Prometheus, TopkOfLatenessAndTheStragglerAlertNameTheSlowRank) {
  start_job(FAKE_TRAIN, {"--steps", "100000", "--slow", "2:3"});
  const int exporter = start_exporter();
  ASSERT_GT(exporter, 0) << slurp(root_ / "exporter.log");
  start_prometheus(exporter);
  const std::string sel = "{job=\"" + job_ + "\"}";
  // Enough history: every rank has matched collectives in Prometheus over the 20 s window.
  const bool ready = poll([&] {
    const json r =
        query("count(increase(ncclwatch_node_matched_collectives_total" + sel + "[20s]) > 20)");
    return r.size() == 1 && r[0]["value"][1] == "4";
  });
  ASSERT_TRUE(ready) << slurp(root_ / "prometheus.log") << slurp(root_ / "exporter.log");
  const json top = query("topk(1, rate(ncclwatch_lateness_seconds_total" + sel + "[20s]))");
  ASSERT_EQ(top.size(), 1u) << top.dump();
  EXPECT_EQ(top[0]["metric"]["rank"], "2") << top.dump();
  EXPECT_EQ(top[0]["metric"]["job"], job_) << "honor_labels keeps the exporter's job label";
  // The node-local wait: the slow rank waits least.
  const json least = query("bottomk(1, rate(ncclwatch_peer_wait_seconds_total" + sel + "[20s]))");
  ASSERT_EQ(least.size(), 1u);
  EXPECT_EQ(least[0]["metric"]["rank"], "2") << least.dump();
  // The alert names it, and only it.
  std::set<std::string> ranks;
  ASSERT_TRUE(poll([&] { return !(ranks = firing("NcclwatchStragglerRank")).empty(); }))
      << get(url(port_, "/api/v1/alerts"));
  EXPECT_EQ(ranks, std::set<std::string>{"2"});
  EXPECT_TRUE(firing("NcclwatchHang").empty());
}

TEST_F(Prometheus, HangAlertFiresForTheWaitingRanks) {
  start_job(FAKE_RANK, {"--steps", "5", "--colls", "2", "--spin", "2:3"});
  const int exporter = start_exporter();
  ASSERT_GT(exporter, 0) << slurp(root_ / "exporter.log");
  start_prometheus(exporter);
  std::set<std::string> ranks;
  ASSERT_TRUE(poll([&] { return (ranks = firing("NcclwatchHang")).size() >= 3; }))
      << get(url(port_, "/api/v1/alerts")) << slurp(root_ / "job.log");
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "3"}));
  const json age = query("max(ncclwatch_oldest_call_in_flight_seconds{job=\"" + job_ + "\"})");
  ASSERT_EQ(age.size(), 1u);
  EXPECT_GT(std::stod(age[0]["value"][1].get<std::string>()), 3);
}

}  // namespace
}  // namespace ncclwatch::e2e

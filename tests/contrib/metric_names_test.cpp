// Every metric the alert rules and the Grafana dashboard use is one the exporter exports, and
// every recording rule the dashboard uses is defined in the rules: a renamed metric must not
// leave a silent, empty panel or an alert that can never fire.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live/metrics_collectable.h"

namespace ncclwatch::live {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> matches(const std::string& text, const std::regex& re, int group = 0) {
  std::set<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it)
    out.insert((*it)[group]);
  return out;
}

// The names the exporter serves, with every optional family fed.
std::set<std::string> exported_names() {
  NodeSnapshot snap;
  RankMetrics m;
  m.job = "j";
  m.host = "h";
  m.rank = 0;
  m.calls[0] = 1;
  m.gpu_time[0][0].count = 1;
  m.gpu_busy_s = 1;
  m.has_kernel_timeline = true;
  m.steps = 1;
  m.seconds_since_last_collective = 1;
  m.lost[0] = 1;  // a kind of loss gets a series once non-zero
  snap.ranks.push_back(m);
  std::set<std::string> names;
  for (const auto& f : MetricsCollectable::families(snap, HistogramScope::kRank)) {
    EXPECT_FALSE(f.metric.empty()) << f.name << " has no series for a fully fed rank";
    if (f.type == prometheus::MetricType::Histogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) names.insert(f.name + suffix);
    } else {
      names.insert(f.name);
    }
  }
  return names;
}

TEST(MetricNames, RulesAndDashboardUseOnlyExportedMetrics) {
  const std::set<std::string> exported = exported_names();
  const std::regex metric_re(R"(\bncclwatch_[a-z_]+\b)");
  const std::regex recorded_use_re(R"(\bncclwatch:[a-z_0-9]+:[a-z_0-9]+\b)");
  const std::regex recorded_def_re(R"(record:\s*(ncclwatch:[a-z_0-9:]+))");
  const std::string rules = slurp(CONTRIB_DIR "/prometheus/rules.yml");
  const std::string dashboard = slurp(CONTRIB_DIR "/grafana/ncclwatch.json");
  ASSERT_FALSE(rules.empty());
  ASSERT_FALSE(dashboard.empty());
  const std::set<std::string> recorded = matches(rules, recorded_def_re, 1);
  EXPECT_GE(recorded.size(), 3u);
  std::size_t used = 0;
  for (const auto* text : {&rules, &dashboard}) {
    for (const auto& name : matches(*text, metric_re)) {
      EXPECT_TRUE(exported.contains(name)) << name << " is used but not exported";
      ++used;
    }
    for (const auto& name : matches(*text, recorded_use_re))
      EXPECT_TRUE(recorded.contains(name)) << name << " is used but no rule records it";
  }
  EXPECT_GE(used, 15u);
}

// The utilization curve per rank (issue 23): for each GPU-time counter (busy, compute, exposed
// communication, idle) a series per rank, and the straggler's own series — selected by the
// recorded ncclwatch:straggler_rank:5m (promtool tests it on rules_test.yml) — which the busy
// curve draws thick and red next to the job's median.
TEST(Dashboard, DrawsTheUtilizationCurvePerRankWithTheStragglerHighlighted) {
  using nlohmann::json;
  const json d = json::parse(slurp(CONTRIB_DIR "/grafana/ncclwatch.json"));
  const std::string straggler = " and on (job, host, rank) ncclwatch:straggler_rank:5m";
  for (const std::string counter :
       {"ncclwatch_gpu_busy_seconds_total", "ncclwatch_gpu_compute_seconds_total",
        "ncclwatch_gpu_exposed_comm_seconds_total", "ncclwatch_gpu_idle_seconds_total"}) {
    const std::string per_rank =
        "rate(" + counter + "{job=~\"$job\",host=~\"$host\"}[$__rate_interval])";
    bool ranks = false, highlighted = false;
    for (const json& panel : d["panels"]) {
      for (const json& t : panel.value("targets", json::array())) {
        const std::string expr = t["expr"], legend = t.value("legendFormat", "");
        if (legend.find("{{rank}}") == std::string::npos) continue;
        ranks |= expr == per_rank;
        if (expr != per_rank + straggler) continue;
        highlighted = legend.find("STRAGGLER") != std::string::npos;
        if (counter != "ncclwatch_gpu_busy_seconds_total") continue;
        // The busy curve: the straggler's series red and thicker than the ranks', beside the
        // job's median.
        bool red = false;
        for (const json& o : panel["fieldConfig"]["overrides"]) {
          if (o["matcher"]["id"] != "byFrameRefID" || o["matcher"]["options"] != t["refId"])
            continue;
          for (const json& p : o["properties"]) {
            if (p["id"] == "color") red = p["value"].value("fixedColor", "") == "red";
            if (p["id"] == "custom.lineWidth") {
              EXPECT_GT(p["value"].get<int>(),
                        panel["fieldConfig"]["defaults"]["custom"]["lineWidth"].get<int>());
            }
          }
        }
        highlighted &= red;
        bool median = false;
        for (const json& m : panel["targets"])
          median |= m["expr"] == "quantile by (job) (0.5, " + per_rank + ")";
        EXPECT_TRUE(median) << "the busy curve has no job median";
      }
    }
    EXPECT_TRUE(ranks) << counter << ": no series per rank";
    EXPECT_TRUE(highlighted) << counter << ": the straggler's series is not drawn apart";
  }
}

}  // namespace
}  // namespace ncclwatch::live

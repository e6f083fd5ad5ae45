// Every metric the alert rules and the Grafana dashboard use is one the exporter exports, and
// every recording rule the dashboard uses is defined in the rules: a renamed metric must not
// leave a silent, empty panel or an alert that can never fire.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ncclwatch::live

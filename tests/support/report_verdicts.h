// What a report concludes, without its figures: who is a straggler, how and why; which links are
// slow and whom they make late; the utilization pattern's row; the hang, desync and incomplete
// verdicts; each finding's source and severity. Two reports whose GPU-time figures may differ
// (node files with compute times on a grid: `reduce --compute-resolution-ns`) must agree on it.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ncclwatch::test_support {

inline std::string verdicts_of(const nlohmann::json& report) {
  const nlohmann::json none = nlohmann::json::array();
  nlohmann::json v = nlohmann::json::object();
  for (const nlohmann::json& s : report.value("stragglers", none)) {
    v["stragglers"].push_back({s.value("rank", -1), s.value("pattern", ""),
                               s.value("period_steps", 0), s.value("cause", ""),
                               s.value("node_problem", false), s.value("severity", "")});
  }
  for (const nlohmann::json& l : report.value("slow_links", none)) {
    v["slow_links"].push_back({l.value("host", ""), l.value("cause", ""), l.value("severity", ""),
                               l.value("late_ranks", none), l.value("hosts_alike", none)});
  }
  if (report.contains("pattern") && report["pattern"].is_object()) {
    const nlohmann::json& p = report["pattern"];
    v["pattern"] = {p.value("row", ""), p.value("severity", ""), p.value("period_steps", 0)};
  }
  for (const char* verdict : {"hang", "desync", "incomplete"}) {
    if (report.contains(verdict)) v[verdict] = report[verdict];
  }
  // Sorted: stragglers, links and findings of about the same cost may change places (the two
  // ranks of a lagging node, one rounded a hair costlier than the other).
  for (const char* list : {"stragglers", "slow_links"}) {
    if (v.contains(list)) std::sort(v[list].begin(), v[list].end());
  }
  std::vector<std::pair<std::string, std::string>> findings;
  for (const nlohmann::json& f : report.value("findings", none))
    findings.emplace_back(f.value("severity", ""), f.value("source", ""));
  std::sort(findings.begin(), findings.end());
  v["findings"] = findings;
  return v.dump();
}

}  // namespace ncclwatch::test_support

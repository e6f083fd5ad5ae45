// The report every part writes into: findings first (what a person acts on), then sections of
// text, plus the JSON document (schema: docs/report-schema.md). The collector creates it, the
// analyses and the topology check append to it, tools/ prints it.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ncclwatch::model {

enum class Severity : int { kInfo = 0, kWarning = 1, kCritical = 2 };

// What a finding costs the job, in one unit for every finding (docs/verdicts.md, "Figures"):
// the share of the job's rank-time (all ranks x step time) it takes, and the same share as
// time per step (pct / 100 x the mean step: what it takes from every rank's step on average).
struct FindingCost {
  double pct = 0;
  double ns_per_step = 0;
};

struct Finding {
  Severity severity = Severity::kInfo;
  std::string source;  // "collector", "overlap", "stragglers", "topology", ...
  std::string text;    // one line, numbers included
  std::optional<FindingCost> cost = std::nullopt;  // none: not a time figure (data, topology)
};

// The order every renderer lists findings in (text, JSON, HTML page): by severity, critical
// first; within one severity, first the findings about the data itself (source "collector" or
// "hang": what was lost or is missing qualifies every figure after it), then those with a cost,
// largest first, then the rest; ties in the order written.
inline std::vector<const Finding*> ordered_findings(const std::vector<Finding>& findings) {
  std::vector<const Finding*> out;
  out.reserve(findings.size());
  for (const Finding& f : findings) out.push_back(&f);
  const auto group = [](const Finding* f) {
    if (f->source == "collector" || f->source == "hang") return 0;
    return f->cost ? 1 : 2;
  };
  std::stable_sort(out.begin(), out.end(), [&](const Finding* a, const Finding* b) {
    if (a->severity != b->severity) return a->severity > b->severity;
    if (group(a) != group(b)) return group(a) < group(b);
    return group(a) == 1 && a->cost->pct > b->cost->pct;  // both have a cost
  });
  return out;
}

struct Section {
  std::string title;
  std::string body;  // preformatted text, lines end with '\n'
};

struct Report {
  std::vector<Finding> findings;
  std::vector<Section> sections;
  nlohmann::json json = nlohmann::json::object();
};

}  // namespace ncclwatch::model

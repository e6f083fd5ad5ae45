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
  // Optional: a one-line chart shown under the text (the pattern verdict's: the job's
  // utilization over a few steps), values 0..1 in time order, and what it shows.
  std::vector<float> chart = {};
  std::string chart_label = {};
};

// The order every renderer lists findings in (text, JSON, HTML page): critical first of all, then
// a demo's "simulated" line (no figure after it is real), then by severity; within one
// severity, first the findings about the data itself (source "collector", "hang" or "nccl": what
// was lost or is missing, or what NCCL itself warned of, qualifies every figure after it), then
// those with a cost, largest first, then the rest; ties in the order written.
inline std::vector<const Finding*> ordered_findings(const std::vector<Finding>& findings) {
  std::vector<const Finding*> out;
  out.reserve(findings.size());
  for (const Finding& f : findings) out.push_back(&f);
  const auto group = [](const Finding* f) {
    if (f->source == "collector" || f->source == "hang" || f->source == "nccl") return 0;
    return f->cost ? 1 : 2;
  };
  std::stable_sort(out.begin(), out.end(), [&](const Finding* a, const Finding* b) {
    const auto tier = [](const Finding* f) {
      return f->severity == Severity::kCritical ? 0 : f->source == "demo" ? 1 : 2;
    };
    if (tier(a) != tier(b)) return tier(a) < tier(b);
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

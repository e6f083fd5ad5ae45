// The report every part writes into: findings first (what a person acts on), then sections of
// text, plus the JSON document (schema: docs/report-schema.md). The collector creates it, the
// analyses and the topology check append to it, tools/ prints it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ncclwatch::model {

enum class Severity : int { kInfo = 0, kWarning = 1, kCritical = 2 };

struct Finding {
  Severity severity = Severity::kInfo;
  std::string source;  // "collector", "overlap", "stragglers", "topology", ...
  std::string text;    // one line, numbers included
};

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

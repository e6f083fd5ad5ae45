// The history in the report: the section "History" (step time and its breakdown over time in at
// most `rows` rows, late ranks in words, regressions with their start), optionally the same late
// ranks and regressions as findings (source "history"), and the JSON object `history`
// (docs/report-schema.md).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "history/history.h"
#include "model/report.h"

namespace ncclwatch::history {

struct HistoryReportOptions {
  std::size_t rows = 12;      // rows of the table (periods merged into this many)
  std::size_t max_lines = 8;  // late-rank and regression lines each, the largest first
  bool findings = true;       // also as findings (a whole-run report has the analyses' own)
};

// Adds the section (first among the sections) and report.json["history"]; nothing when the
// history holds no step.
void add_history(const History& h, model::Report& report, const HistoryReportOptions& options = {});

nlohmann::json history_json(const History& h);

// "03:12:05" (UTC), or "2026-12-04 03:12:05" with the date.
std::string wall_text(int64_t realtime_ns, bool with_date);

// "rank 17 slow from 03:12:05 to 05:40:10 UTC (steps 1200-3400): 9.1 ms late per step, cause
// gpu-slow (compute +8.7 ms over its peers)".
std::string slow_rank_text(const History& h, const SlowRank& s);
// "step time +18% from step 1200 (03:12:05 UTC) to the end: 24.1 ms against 20.4 ms; waiting
// for peers grew most (+3.1 ms)".
std::string regression_text(const History& h, const Regression& g);

}  // namespace ncclwatch::history

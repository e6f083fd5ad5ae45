// `--html FILE`: one self-contained page (no network, no CDN: the CSS and the small canvas
// drawing code are inline and our own, html_page.h) with the findings at the top, the GPU
// utilization curve (the whole run with what nvidia-smi would sample beside it; a window of steps
// finely, per rank), one step on every rank (swimlanes), a heatmap of GPU utilization per rank
// and step, the step-time breakdown as stacked bars per rank, step time and overlap per step,
// time each rank waited for its peers (stragglers marked), the bucket table and the topology
// findings.
//
// Built from the report's JSON (utilization, breakdown[], overlap[], stragglers[], buckets[],
// topology): big jobs are aggregated before they reach the page — `utilization` is bounded by
// its analysis (utilization_curve.h, step_swimlane.h) and taken whole; at most kMaxRows rank rows
// x kMaxCols step columns in the heatmap (each cell the mean of the ranks and steps it covers),
// kMaxBars rank groups in the bar charts, kMaxSteps points per line — so 4096 ranks x 10 000
// steps stay a page of a few hundred KB. per_step entries that stand for several merged steps
// (big jobs, see step_breakdown_report.h) are placed by their step numbers and weighted by how
// many steps of a cell they cover; a partial last step (per_step partial: true) is left out of
// the per-step plots. Numbers are rounded to the nearest double of their decimals (3.86, never
// 3.8600000000000003).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "model/report.h"

namespace ncclwatch::exporter {

inline constexpr std::size_t kMaxRows = 128;
inline constexpr std::size_t kMaxCols = 400;
inline constexpr std::size_t kMaxBars = 64;
inline constexpr std::size_t kMaxSteps = 1000;

class HtmlReport {
 public:
  // The aggregated data the page draws (exposed for tests).
  static nlohmann::json page_data(const model::Report& report);
  static std::string render(const model::Report& report);
  // `data` as JSON text safe inside a <script> element (no '<', '>', '&', U+2028/2029 unescaped).
  static std::string script_safe_json(const nlohmann::json& data);
  static bool write_file(const std::string& path, const model::Report& report, std::string& error);
};

}  // namespace ncclwatch::exporter

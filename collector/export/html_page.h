// The text of the --html page around its data: the HTML and CSS, and the drawing code (plain
// JavaScript on <canvas>, ours: no library, no network). Three parts, one file each:
//   html_page_head.cpp    the HTML skeleton, the CSS, the shared drawing helpers (axes with
//                         units, round ticks, numbers for people);
//   html_page_curves.cpp  the utilization curve (whole run; a window of steps finely; per rank)
//                         and one step on every rank (swimlanes);
//   html_page_plots.cpp   the per-step plots (heatmap, breakdown bars, step time, waits), the
//                         tables, and the end of the page.
// The page marks <body data-status> "ok" (or "error: ...") and data-plots with the number of
// plots that drew data, and writes what each plot drew (its series, axes, marks) as JSON into
// <pre id="drawn" hidden>, which the browser test reads
// (tests/collector/export/html_page_check.py).
#pragma once

#include <string>

namespace ncclwatch::exporter::html_page {

extern const char* const kHead;    // up to the opening tag of the data's <script> element
extern const char* const kCommon;  // closes it; the shared helpers
extern const char* const kCurves;  // the curve and swimlane plots
extern const char* const kPlots;   // the per-step plots, tables, and the page's end

// The whole page around `data_json` (already safe inside a <script> element).
inline std::string page(const std::string& data_json) {
  return std::string(kHead) + data_json + kCommon + kCurves + kPlots;
}

}  // namespace ncclwatch::exporter::html_page

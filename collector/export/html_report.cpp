#include "export/html_report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "model/vocabulary.h"

namespace ncclwatch::exporter {
namespace {

using nlohmann::json;

double num(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

using model::severity_name;

// Group g of `groups` over n items covers [g*n/groups, (g+1)*n/groups).
std::size_t group_of(std::size_t i, std::size_t n, std::size_t groups) {
  return n <= groups ? i : i * groups / n;
}
std::string range_label(const char* what, std::size_t first, std::size_t last) {
  return first == last ? fmt::format("{} {}", what, first)
                       : fmt::format("{}s {}-{}", what, first, last);
}

// First item of group g (the inverse of group_of).
std::size_t group_first(std::size_t g, std::size_t n, std::size_t groups) {
  return n <= groups ? g : (g * n + groups - 1) / groups;
}

// Steps [first, last] (0-based) of a per_step entry: one step, or several merged
// (breakdown[].per_step of a big job); older reports without `step` count by position.
std::pair<std::size_t, std::size_t> entry_steps(const json& e, std::size_t position) {
  const double first = e.value("step", 0.0), last = e.value("last_step", first);
  if (first < 1) return {position, position};
  const auto a = static_cast<std::size_t>(first) - 1;
  return {a, std::max(a, static_cast<std::size_t>(std::max(first, last)) - 1)};
}

// A per_step entry of a rank whose compute kernels were sampled (NCCLWATCH_KERNELS=sampled:N)
// says nothing about the GPU unless its steps lie inside a sampled window.
bool measured(const json& entry) {
  return entry.value("sampled", true);
}

std::size_t steps_of(const std::vector<const json*>& ranks) {
  std::size_t steps = 0;
  for (const json* r : ranks) {
    const json& ps = (*r)["per_step"];
    for (std::size_t k = 0; k < ps.size(); ++k) {
      steps = std::max(steps, entry_steps(ps[k], k).second + 1);
    }
  }
  return steps;
}

// Calls add(group, weight) for each of `groups` groups over n steps that steps [a, b] cover,
// weight = how many of those steps fall in it.
template <typename Add>
void spread(std::pair<std::size_t, std::size_t> ab, std::size_t n, std::size_t groups, Add add) {
  const std::size_t a = std::min(ab.first, n - 1), b = std::min(ab.second, n - 1);
  for (std::size_t g = group_of(a, n, groups); g <= group_of(b, n, groups); ++g) {
    const std::size_t lo = std::max(a, group_first(g, n, groups));
    const std::size_t hi = std::min(b + 1, group_first(g + 1, n, groups));
    if (hi > lo) add(g, static_cast<double>(hi - lo));
  }
}

double round1(double v) {
  return static_cast<double>(static_cast<long long>(v * 10.0 + (v >= 0 ? 0.5 : -0.5))) / 10.0;
}

const char* kBarParts[] = {"compute_us",   "exposed_wait_us",     "exposed_transfer_us",
                           "memcpy_us",    "idle_before_comm_us", "idle_step_boundary_us",
                           "idle_other_us"};

json heatmap(const std::vector<const json*>& ranks) {
  const std::size_t steps = steps_of(ranks);
  const std::size_t rows = std::min(ranks.size(), kMaxRows), cols = std::min(steps, kMaxCols);
  std::vector<double> sum(rows * cols, 0.0), count(rows * cols, 0.0);
  std::vector<int> row_first(rows, -1), row_last(rows, -1);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::size_t row = group_of(i, ranks.size(), rows);
    const int rank = (*ranks[i])["rank"].get<int>();
    if (row_first[row] < 0) row_first[row] = rank;
    row_last[row] = rank;
    const json& ps = (*ranks[i])["per_step"];
    for (std::size_t k = 0; k < ps.size(); ++k) {
      if (!measured(ps[k])) continue;
      spread(entry_steps(ps[k], k), steps, cols, [&](std::size_t col, double w) {
        sum[row * cols + col] += w * num(ps[k], "smi_util_pct");
        count[row * cols + col] += w;
      });
    }
  }
  json values = json::array(), row_labels = json::array(), col_labels = json::array();
  for (std::size_t c = 0; c < rows * cols; ++c) {
    values.push_back(count[c] > 0 ? round1(sum[c] / count[c]) : -1.0);
  }
  for (std::size_t r = 0; r < rows; ++r) {
    row_labels.push_back(range_label("rank", static_cast<std::size_t>(std::max(0, row_first[r])),
                                     static_cast<std::size_t>(std::max(0, row_last[r]))));
  }
  for (std::size_t c = 0; c < cols; ++c) {
    col_labels.push_back(
        range_label("step", group_first(c, steps, cols) + 1, group_first(c + 1, steps, cols)));
  }
  return {{"rows", rows},
          {"cols", cols},
          {"values", values},
          {"row_labels", row_labels},
          {"col_labels", col_labels}};
}

json breakdown_bars(const std::vector<const json*>& ranks) {
  const std::size_t groups = std::min(ranks.size(), kMaxBars);
  std::vector<std::vector<double>> sum(groups, std::vector<double>(std::size(kBarParts), 0.0));
  std::vector<double> count(groups, 0.0);
  std::vector<int> first(groups, -1), last(groups, -1);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::size_t g = group_of(i, ranks.size(), groups);
    const int rank = (*ranks[i])["rank"].get<int>();
    if (first[g] < 0) first[g] = rank;
    last[g] = rank;
    for (std::size_t p = 0; p < std::size(kBarParts); ++p)
      sum[g][p] += num(*ranks[i], kBarParts[p]);
    count[g] += 1;
  }
  json bars = json::array();
  for (std::size_t g = 0; g < groups; ++g) {
    json parts = json::array();
    for (std::size_t p = 0; p < std::size(kBarParts); ++p) {
      parts.push_back(std::round(sum[g][p] / std::max(1.0, count[g])) / 1000.0);  // µs -> ms
    }
    bars.push_back({{"label", range_label("rank", static_cast<std::size_t>(std::max(0, first[g])),
                                          static_cast<std::size_t>(std::max(0, last[g])))},
                    {"ms", parts}});
  }
  return {{"parts",
           {"compute", "exposed: waiting for peers", "exposed: transfer", "memcpy/memset",
            "idle before collectives", "idle at the step boundary", "idle, other"}},
          {"bars", bars}};
}

json step_series(const std::vector<const json*>& ranks) {
  const std::size_t steps = steps_of(ranks);
  const std::size_t points = std::min(steps, kMaxSteps);
  std::vector<double> step_sum(points, 0), n(points, 0), hidden(points, 0), comm(points, 0);
  for (const json* r : ranks) {
    const json& ps = (*r)["per_step"];
    for (std::size_t k = 0; k < ps.size(); ++k) {
      if (!measured(ps[k])) continue;
      // Entry values are means per step: weighted by the steps they stand for.
      const double h = num(ps[k], "comm_overlapped_us");
      const double c = h + num(ps[k], "exposed_wait_us") + num(ps[k], "exposed_transfer_us");
      spread(entry_steps(ps[k], k), steps, points, [&](std::size_t p, double w) {
        step_sum[p] += w * num(ps[k], "step_us");
        n[p] += w;
        hidden[p] += w * h;
        comm[p] += w * c;
      });
    }
  }
  json step_ms = json::array(), overlap = json::array(), labels = json::array();
  for (std::size_t p = 0; p < points; ++p) {
    step_ms.push_back(n[p] > 0 ? round1(step_sum[p] / n[p] / 100.0) / 10.0 : 0.0);
    overlap.push_back(comm[p] > 0 ? round1(100.0 * hidden[p] / comm[p]) : 0.0);
    labels.push_back(group_first(p, steps, points) + 1);
  }
  return {{"step", labels}, {"step_ms", step_ms}, {"overlap_pct", overlap}};
}

json waits(const json& overlap, const json& stragglers) {
  const std::size_t groups = std::min(overlap.size(), kMaxBars);
  std::vector<double> sum(groups, 0), count(groups, 0);
  std::vector<int> first(groups, -1), last(groups, -1);
  for (std::size_t i = 0; i < overlap.size(); ++i) {
    const std::size_t g = group_of(i, overlap.size(), groups);
    const int rank = overlap[i].value("rank", -1);
    if (first[g] < 0) first[g] = rank;
    last[g] = rank;
    const double steps = std::max(1.0, num(overlap[i], "steps"));
    sum[g] += num(overlap[i], "wait_us") / steps / 1000.0;
    count[g] += 1;
  }
  json bars = json::array();
  for (std::size_t g = 0; g < groups; ++g) {
    bars.push_back({{"label", range_label("rank", static_cast<std::size_t>(std::max(0, first[g])),
                                          static_cast<std::size_t>(std::max(0, last[g])))},
                    {"ms", round1(sum[g] / std::max(1.0, count[g]) * 10.0) / 10.0}});
  }
  // The straggler findings' own figures and words (docs/verdicts.md, "Figures"): lateness where
  // it happens, cost, cause and its explanation.
  json late = json::array();
  for (const json& s : stragglers) {
    late.push_back({{"rank", s.value("rank", -1)},
                    {"host", s.value("host", "")},
                    {"lateness_ms", round1(num(s, "lateness_us") / 100.0) / 10.0},
                    {"late_at", s.value("late_at", "")},
                    {"pattern", s.value("pattern", "")},
                    {"period", s.value("period_steps", 0)},
                    {"cost_ms", round1(num(s, "cost_us_per_step") / 100.0) / 10.0},
                    {"cost_pct", round1(num(s, "cost_pct"))},
                    {"severity", s.value("severity", "info")},
                    {"cause", s.value("cause", "")},
                    {"cause_text", s.value("cause_text", "")}});
  }
  return {{"bars", bars}, {"stragglers", late}};
}

}  // namespace

json HtmlReport::page_data(const model::Report& report) {
  const json& j = report.json;
  json d;
  d["job"] = j.value("job", "");
  json findings = json::array();
  for (const model::Finding* f : model::ordered_findings(report.findings)) {  // the report's order
    findings.push_back(
        {{"severity", severity_name(f->severity)}, {"source", f->source}, {"text", f->text}});
  }
  d["findings"] = findings;
  std::vector<const json*> gpu;
  if (j.contains("breakdown") && j["breakdown"].is_array()) {
    for (const json& r : j["breakdown"]) {
      if (r.value("basis", "") == "gpu" && r.contains("per_step")) gpu.push_back(&r);
    }
  }
  d["heatmap"] = heatmap(gpu);
  d["breakdown"] = breakdown_bars(gpu);
  d["steps"] = step_series(gpu);
  d["waits"] = waits(j.value("overlap", json::array()), j.value("stragglers", json::array()));
  json buckets = json::array();
  for (const json& b : j.value("buckets", json::array())) {
    buckets.push_back({{"comm", b.value("comm_id", "")},
                       {"ordinal", b.value("ordinal", 0)},
                       {"mib", round1(num(b, "bytes") / 1048576.0)},
                       {"gpu_ms", round1(num(b, "gpu_us") / 100.0) / 10.0},
                       {"overlap_pct", round1(num(b, "overlap_pct"))},
                       {"exposed_ms", round1(num(b, "exposed_us_per_step") / 100.0) / 10.0}});
  }
  d["buckets"] = buckets;
  json topo = json::array();
  if (j.contains("topology") && j["topology"].is_object()) {
    for (const json& f : j["topology"].value("findings", json::array())) {
      topo.push_back({{"severity", f.value("severity", "")}, {"message", f.value("message", "")}});
    }
  }
  d["topology"] = topo;
  d["gpu_ranks"] = gpu.size();
  return d;
}

namespace {

// The page. The drawing code is ours (no third-party code), about 150 lines of
// plain JavaScript on <canvas>; no library, no network. It marks <body data-status> "ok" (or
// "error: ...") and data-plots with the number of plots that had data, for the browser test.
constexpr const char* kPageHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>ncclwatch report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 8px} h2{font-size:16px;margin:22px 0 6px}
.f{padding:3px 8px;margin:2px 0;border-left:4px solid #999;background:#fff;white-space:pre-wrap}
.f.warning{border-color:#e08a00}.f.critical{border-color:#c00;background:#fff3f3}.f.info{border-color:#7a9}
.src{font-weight:600;margin-right:6px} canvas{background:#fff;border:1px solid #ddd}
table{border-collapse:collapse;background:#fff} td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}
.note{color:#666;font-size:12px} .legend span{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
</style></head>
<body data-status="loading">
<h1 id="title">ncclwatch report</h1>
<h2>Findings</h2><div id="findings"></div>
<h2>GPU utilization per rank and step (what nvidia-smi would show)</h2>
<div class="note" id="heat-note"></div><canvas id="heat" class="plot" width="1100" height="320"></canvas>
<h2>Where each step's time went (mean per steady step)</h2>
<div class="legend" id="bd-legend"></div><canvas id="bd" class="plot" width="1100" height="300"></canvas>
<h2>Step time and overlap per step</h2>
<canvas id="steps" class="plot" width="1100" height="260"></canvas>
<h2>Time waiting for peers per step, by rank (stragglers make the others wait)</h2>
<div id="late-list"></div><canvas id="waits" class="plot" width="1100" height="220"></canvas>
<h2>All-reduce buckets repeating each step</h2><div id="buckets" class="plot"></div>
<h2>Topology</h2><div id="topology"></div>
<script type="application/json" id="data">)HTML";

constexpr const char* kPageTail = R"HTML(</script>
<script>
"use strict";
window.onerror = function (m) { document.body.dataset.status = "error: " + m; };
const D = JSON.parse(document.getElementById("data").textContent);
const el = (t, c, txt) => { const e = document.createElement(t); if (c) e.className = c; if (txt !== undefined) e.textContent = txt; return e; };
const colors = ["#3b7dd8", "#d9534f", "#f0ad4e", "#9b59b6", "#5bc0de", "#8d6e63", "#bbbbbb"];
let plots = 0;
function mark(id, n) { document.getElementById(id).dataset.points = n; if (n > 0) plots++; }
function empty(ctx, c, text) { ctx.fillStyle = "#888"; ctx.font = "13px sans-serif"; ctx.fillText(text, 20, 30); }
document.getElementById("title").textContent = "ncclwatch report" + (D.job ? " — " + D.job : "");
for (const f of D.findings) {
  const d = el("div", "f " + f.severity); d.appendChild(el("span", "src", "[" + f.source + "]"));
  d.appendChild(document.createTextNode(f.text)); document.getElementById("findings").appendChild(d);
}
function heat() {
  const c = document.getElementById("heat"), ctx = c.getContext("2d"), H = D.heatmap;
  const n = H.values.filter(v => v >= 0).length; mark("heat", n);
  if (!n) return empty(ctx, c, "no GPU-timed ranks");
  document.getElementById("heat-note").textContent = H.rows + " rows x " + H.cols + " columns" +
    " (each cell the mean of the ranks and steps it covers); green = busy 100%, yellow ~70%, red = idle";
  const left = 110, top = 10, w = (c.width - left - 60) / H.cols, h = Math.max(2, (c.height - top - 30) / H.rows);
  for (let r = 0; r < H.rows; r++) for (let k = 0; k < H.cols; k++) {
    const v = H.values[r * H.cols + k]; if (v < 0) continue;
    const t = Math.max(0, Math.min(1, v / 100));
    ctx.fillStyle = "hsl(" + Math.round(120 * t * t) + ",70%," + Math.round(40 + 15 * (1 - t)) + "%)";
    ctx.fillRect(left + k * w, top + r * h, Math.ceil(w), Math.ceil(h));
  }
  ctx.fillStyle = "#333"; ctx.font = "11px sans-serif";
  const every = Math.ceil(H.rows / Math.floor((c.height - 40) / 12));
  for (let r = 0; r < H.rows; r += every) ctx.fillText(H.row_labels[r], 4, top + r * h + Math.min(h, 12) - 2);
  const xe = Math.ceil(H.cols / 10);
  for (let k = 0; k < H.cols; k += xe) ctx.fillText(H.col_labels[k], left + k * w, c.height - 8);
}
function bars() {
  const c = document.getElementById("bd"), ctx = c.getContext("2d"), B = D.breakdown;
  mark("bd", B.bars.length); if (!B.bars.length) return empty(ctx, c, "no GPU-timed ranks");
  const lg = document.getElementById("bd-legend");
  B.parts.forEach((p, i) => { const s = el("span"); const b = el("i"); b.style.background = colors[i]; s.appendChild(b); s.appendChild(document.createTextNode(p)); lg.appendChild(s); });
  const max = Math.max(...B.bars.map(b => b.ms.reduce((a, x) => a + x, 0))) || 1;
  const left = 110, bh = Math.max(3, Math.min(24, (c.height - 30) / B.bars.length - 2));
  ctx.font = "11px sans-serif";
  B.bars.forEach((b, i) => {
    let x = left; const y = 5 + i * (bh + 2);
    b.ms.forEach((v, p) => { const w = v / max * (c.width - left - 90); ctx.fillStyle = colors[p]; ctx.fillRect(x, y, w, bh); x += w; });
    ctx.fillStyle = "#333"; if (bh >= 9) ctx.fillText(b.label, 4, y + bh - 2);
    if (bh >= 9) ctx.fillText(b.ms.reduce((a, v) => a + v, 0).toFixed(1) + " ms", x + 4, y + bh - 2);
  });
}
function lines() {
  const c = document.getElementById("steps"), ctx = c.getContext("2d"), S = D.steps;
  mark("steps", S.step.length); if (!S.step.length) return empty(ctx, c, "no steps");
  const left = 50, right = c.width - 50, top = 15, bottom = c.height - 25;
  const maxMs = Math.max(...S.step_ms) || 1, n = S.step.length;
  const x = i => left + (n > 1 ? i / (n - 1) : 0.5) * (right - left);
  ctx.strokeStyle = "#ccc"; ctx.strokeRect(left, top, right - left, bottom - top);
  const draw = (vals, max, col) => { ctx.strokeStyle = col; ctx.lineWidth = 2; ctx.beginPath();
    vals.forEach((v, i) => { const y = bottom - v / max * (bottom - top); i ? ctx.lineTo(x(i), y) : ctx.moveTo(x(i), y); }); ctx.stroke(); };
  draw(S.step_ms, maxMs, colors[0]); draw(S.overlap_pct, 100, colors[2]);
  ctx.fillStyle = "#333"; ctx.font = "11px sans-serif";
  ctx.fillText(maxMs.toFixed(1) + " ms", 2, top + 8); ctx.fillText("100%", right + 4, top + 8);
  ctx.fillStyle = colors[0]; ctx.fillText("step time (mean over ranks)", left + 8, top + 14);
  ctx.fillStyle = colors[2]; ctx.fillText("comm overlapped by compute", left + 200, top + 14);
  ctx.fillStyle = "#333"; ctx.fillText("step " + S.step[0], left, c.height - 6); ctx.fillText("step " + S.step[n - 1], right - 50, c.height - 6);
}
function waits() {
  const c = document.getElementById("waits"), ctx = c.getContext("2d"), W = D.waits;
  const ll = document.getElementById("late-list");
  for (const s of W.stragglers) ll.appendChild(el("div", "f " + s.severity, "straggler: rank " + s.rank + " (" + s.host + ") " +
    s.lateness_ms + " ms late at " + s.late_at + (s.pattern === "periodic" ? " every " + s.period + " steps" : s.pattern === "spikes" ? " in its late steps" : "") +
    ", costing " + s.cost_ms + " ms/step (" + s.cost_pct + "% of step time) — cause " + s.cause + ": " + s.cause_text));
  if (!W.stragglers.length) ll.appendChild(el("div", "note", "no straggler found"));
  mark("waits", W.bars.length); if (!W.bars.length) return empty(ctx, c, "no ranks");
  const max = Math.max(...W.bars.map(b => b.ms)) || 1, bw = (c.width - 60) / W.bars.length;
  ctx.font = "11px sans-serif";
  W.bars.forEach((b, i) => { const h = b.ms / max * (c.height - 40); ctx.fillStyle = colors[1];
    ctx.fillRect(40 + i * bw, c.height - 20 - h, Math.max(1, bw - 2), h);
    if (bw > 40) { ctx.fillStyle = "#333"; ctx.fillText(b.label, 40 + i * bw, c.height - 6); } });
  ctx.fillStyle = "#333"; ctx.fillText(max.toFixed(1) + " ms", 2, 14);
}
function table(id, rows, cols, head) {
  const host = document.getElementById(id); mark(id, rows.length);
  if (!rows.length) { host.appendChild(el("div", "note", "none")); return; }
  const t = el("table"), tr = el("tr"); head.forEach(h => tr.appendChild(el("th", "", h))); t.appendChild(tr);
  rows.forEach(r => { const row = el("tr"); cols.forEach(k => row.appendChild(el("td", "", String(r[k])))); t.appendChild(row); });
  host.appendChild(t);
}
heat(); bars(); lines(); waits();
table("buckets", D.buckets, ["comm", "ordinal", "mib", "gpu_ms", "overlap_pct", "exposed_ms"],
      ["comm", "#", "MiB", "GPU ms", "overlap %", "exposed ms/step"]);
const topo = document.getElementById("topology");
if (!D.topology.length) topo.appendChild(el("div", "note", "no topology findings (no NCCL_DEBUG logs found, or none to report)"));
for (const f of D.topology) topo.appendChild(el("div", "f " + (f.severity || "info"), f.message));
document.body.dataset.plots = plots;
if (document.body.dataset.status === "loading") document.body.dataset.status = "ok";
</script></body></html>
)HTML";

}  // namespace

// The page's data as JSON text that cannot leave or confuse its <script> element whatever the
// strings hold: every '<' (so no "</script>", "<!--" or "<script" reaches the HTML parser, which
// would end the element or swallow the rest of the page as script text), '>' and '&' are written
// as JSON's \u escapes, and so are U+2028/U+2029 (line terminators to older JavaScript).
// Outside strings JSON has none of these characters, so the text parses to the same value.
std::string HtmlReport::script_safe_json(const nlohmann::json& data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(text.size() + text.size() / 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      safe += "\\u003c";
    } else if (c == '>') {
      safe += "\\u003e";
    } else if (c == '&') {
      safe += "\\u0026";
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      safe += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      safe += c;
    }
  }
  return safe;
}

std::string HtmlReport::render(const model::Report& report) {
  return std::string(kPageHead) + script_safe_json(page_data(report)) + kPageTail;
}

bool HtmlReport::write_file(const std::string& path, const model::Report& report,
                            std::string& error) {
  const std::string page = render(report);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    error = fmt::format("{}: {}", path, std::strerror(errno));
    return false;
  }
  const bool written = std::fwrite(page.data(), 1, page.size(), f) == page.size();
  if (std::fclose(f) != 0 || !written) {
    error = fmt::format("{}: {}", path, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace ncclwatch::exporter

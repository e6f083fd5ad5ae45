#include "export/html_report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "export/html_page.h"
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

// The last step of a run from ranges that lacks its tail (per_step partial: true): drawn, it
// would be a column at 100 % busy and a step time at the floor. The page leaves it out.
bool partial(const json& e) {
  const auto it = e.find("partial");
  return it != e.end() && it->is_boolean() && it->get<bool>();
}

std::size_t steps_of(const std::vector<const json*>& ranks) {
  std::size_t steps = 0;
  for (const json* r : ranks) {
    const json& ps = (*r)["per_step"];
    for (std::size_t k = 0; k < ps.size(); ++k) {
      if (partial(ps[k])) continue;
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

// v rounded to `decimals` places as the nearest double (3.86, never 3.8600000000000003).
double rounded(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}
double round1(double v) {
  return rounded(v, 1);
}
// µs as ms with `decimals` places, rounded in µs (1005 µs: 1.01 ms, where 1.005 ms would round
// down in binary).
double ms_of(double us, int decimals) {
  return std::round(us / std::pow(10.0, 3 - decimals)) / std::pow(10.0, decimals);
}

const char* kBarParts[] = {"compute_us",   "exposed_wait_us",     "exposed_transfer_us",
                           "memcpy_us",    "idle_before_comm_us", "idle_step_boundary_us",
                           "idle_other_us"};

json heatmap(const std::vector<const json*>& ranks) {
  const std::size_t steps = steps_of(ranks);
  const std::size_t rows = std::min(ranks.size(), kMaxRows), cols = std::min(steps, kMaxCols);
  std::vector<double> sum(rows * cols, 0.0), count(rows * cols, 0.0);
  std::vector<int> row_first(rows, -1), row_last(rows, -1);
  bool partial_left_out = false;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::size_t row = group_of(i, ranks.size(), rows);
    const int rank = (*ranks[i])["rank"].get<int>();
    if (row_first[row] < 0) row_first[row] = rank;
    row_last[row] = rank;
    const json& ps = (*ranks[i])["per_step"];
    for (std::size_t k = 0; k < ps.size(); ++k) {
      if (!measured(ps[k])) continue;
      if (partial(ps[k])) {
        partial_left_out = true;
        continue;
      }
      spread(entry_steps(ps[k], k), steps, cols, [&](std::size_t col, double w) {
        sum[row * cols + col] += w * num(ps[k], "smi_util_pct");
        count[row * cols + col] += w;
      });
    }
  }
  json values = json::array(), row_labels = json::array(), col_labels = json::array(),
       col_first = json::array();
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
    col_first.push_back(group_first(c, steps, cols) + 1);
  }
  return {{"rows", rows},
          {"cols", cols},
          {"values", values},
          {"row_labels", row_labels},
          {"col_labels", col_labels},
          {"col_first", col_first},
          {"steps", steps},
          {"partial_left_out", partial_left_out}};
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
      if (partial(ps[k])) continue;
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
    step_ms.push_back(n[p] > 0 ? ms_of(step_sum[p] / n[p], 2) : 0.0);
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
    sum[g] += num(overlap[i], "wait_us") / steps;
    count[g] += 1;
  }
  json bars = json::array();
  for (std::size_t g = 0; g < groups; ++g) {
    bars.push_back({{"label", range_label("rank", static_cast<std::size_t>(std::max(0, first[g])),
                                          static_cast<std::size_t>(std::max(0, last[g])))},
                    {"ms", ms_of(sum[g] / std::max(1.0, count[g]), 2)}});
  }
  // The straggler findings' own figures and words (docs/verdicts.md, "Figures"): lateness where
  // it happens, cost, cause and its explanation.
  json late = json::array();
  for (const json& s : stragglers) {
    late.push_back({{"rank", s.value("rank", -1)},
                    {"host", s.value("host", "")},
                    {"lateness_ms", ms_of(num(s, "lateness_us"), 2)},
                    {"late_at", s.value("late_at", "")},
                    {"pattern", s.value("pattern", "")},
                    {"period", s.value("period_steps", 0)},
                    {"cost_ms", ms_of(num(s, "cost_us_per_step"), 2)},
                    {"cost_pct", round1(num(s, "cost_pct"))},
                    {"severity", s.value("severity", "info")},
                    {"cause", s.value("cause", "")},
                    {"cause_text", s.value("cause_text", "")}});
  }
  return {{"bars", bars}, {"stragglers", late}};
}

// The whole run's history (report JSON `history`, at most 400 periods) as minutes since its
// start, with the capture windows (`windows`) as spans of the same axis.
json history_plot(const json& j) {
  json out = {{"periods", json::array()}, {"windows", json::array()}};
  const auto h = j.find("history");
  if (h == j.end() || !h->is_object() || !h->contains("periods")) return out;
  const double t0 = num(*h, "start_realtime_ns");
  const auto minutes = [t0](double ns) { return std::round((ns - t0) / 6e8) / 100.0; };
  const auto figure = [](const json& p, const char* key) {
    const auto it = p.find(key);
    return it != p.end() && it->is_number() ? json(std::round(it->get<double>() * 100) / 100)
                                            : json(nullptr);
  };
  for (const json& p : (*h)["periods"]) {
    if (!p.is_object()) continue;
    out["periods"].push_back({{"t", minutes(num(p, "start_realtime_ns"))},
                              {"t_end", minutes(num(p, "end_realtime_ns"))},
                              {"first_step", p.value("first_step", 0)},
                              {"step", figure(p, "step_ms")},
                              {"compute", figure(p, "compute_ms")},
                              {"exposed", figure(p, "exposed_ms")},
                              {"wait", figure(p, "wait_ms")},
                              {"idle", figure(p, "idle_ms")}});
  }
  for (const json& w : j.value("windows", json::array())) {
    if (!w.is_object()) continue;
    const double end = num(w, "end_realtime_ns");
    out["windows"].push_back({{"index", w.value("index", 0)},
                              {"trigger", w.value("trigger", "")},
                              {"text", w.value("text", "")},
                              {"from", minutes(num(w, "start_realtime_ns"))},
                              {"to", end > 0 ? json(minutes(end)) : json(nullptr)}});
  }
  return out;
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
                       {"gpu_ms", ms_of(num(b, "gpu_us"), 2)},
                       {"overlap_pct", round1(num(b, "overlap_pct"))},
                       {"exposed_ms", ms_of(num(b, "exposed_us_per_step"), 2)}});
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
  // The utilization curve and the swimlanes as the analysis wrote them: already bounded for any
  // job (utilization_curve.h, step_swimlane.h), so the page takes them whole.
  const auto u = j.find("utilization");
  d["utilization"] = u != j.end() && u->is_object() ? *u : json::object();
  d["history"] = history_plot(j);
  return d;
}

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
  return html_page::page(script_safe_json(page_data(report)));
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

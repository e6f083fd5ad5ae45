#include "analysis/utilization_report.h"

#include <cmath>

#include <fmt/format.h>

#include "analysis/units.h"
#include "model/vocabulary.h"

namespace ncclwatch::analysis {
namespace {

using nlohmann::json;

// Shares 0..1 as percent with one decimal (38.6, never 38.600000000000001).
json pct1(const std::vector<float>& v) {
  json out = json::array();
  for (float x : v) out.push_back(std::round(static_cast<double>(x) * 1000.0) / 10.0);
  return out;
}
// Shares as whole percent: the per-rank rows (many values).
json pct0(const std::vector<float>& v) {
  json out = json::array();
  for (float x : v) out.push_back(static_cast<int>(std::lround(static_cast<double>(x) * 100.0)));
  return out;
}
// Aligned ns relative to the curve's origin, as µs (3 decimals: exact ns).
double rel_us(int64_t ns, int64_t origin) {
  return model::us(ns - origin);
}
using model::us;

json bins_json(const TimeBins& b, int64_t origin) {
  return {{"begin_us", rel_us(b.begin_ns, origin)}, {"bin_us", us(b.width_ns)}, {"bins", b.count}};
}

json curve_json(const JobCurve& c, int64_t origin) {
  json j = bins_json(c.bins, origin);
  j["busy_pct"] = pct1(c.busy);
  j["busy_min_pct"] = pct1(c.busy_min);
  j["busy_max_pct"] = pct1(c.busy_max);
  j["compute_pct"] = pct1(c.compute);
  j["comm_pct"] = pct1(c.comm);
  return j;
}

std::string row_label(int32_t first, int32_t last) {
  return first == last ? fmt::format("rank {}", first) : fmt::format("ranks {}-{}", first, last);
}

json rows_json(const std::vector<CurveRow>& rows) {
  json out = json::array();
  for (const CurveRow& r : rows) {
    out.push_back({{"label", row_label(r.first_rank, r.last_rank)},
                   {"first_rank", r.first_rank},
                   {"last_rank", r.last_rank},
                   {"ranks", r.ranks},
                   {"host", r.host},
                   {"hosts", r.hosts},
                   {"straggler", r.straggler},
                   {"busy_pct", pct0(r.busy)}});
  }
  return out;
}

json steps_json(const std::vector<StepMark>& marks, std::size_t first, std::size_t last,
                int64_t origin) {
  json in_window = json::array(), special = json::array();
  for (const StepMark& m : marks) {
    const json s = {{"step", m.step},
                    {"begin_us", rel_us(m.begin_ns, origin)},
                    {"end_us", rel_us(m.end_ns, origin)},
                    {"kind", m.kind}};
    if (m.step >= first && m.step <= last) in_window.push_back(s);
    if (!m.kind.empty() && special.size() < kCurveMaxSpecialSteps) special.push_back(s);
  }
  return {{"window", in_window}, {"marked", special}};
}

json lanes_json(const std::vector<StepLanes>& lanes, int64_t origin) {
  json out = json::array();
  for (const StepLanes& l : lanes) {
    json rows = json::array();
    for (const LaneRow& r : l.rows) {
      json runs = json::array();
      for (const auto& run : r.runs) runs.push_back({run[0], run[1], run[2]});
      rows.push_back({{"label", row_label(r.first_rank, r.last_rank)},
                      {"first_rank", r.first_rank},
                      {"last_rank", r.last_rank},
                      {"ranks", r.ranks},
                      {"host", r.host},
                      {"straggler", r.straggler},
                      {"runs", std::move(runs)}});
    }
    out.push_back({{"why", l.why},
                   {"step", l.step},
                   {"begin_us", rel_us(l.begin_ns, origin)},
                   {"end_us", rel_us(l.end_ns, origin)},
                   {"step_us", us(l.step_ns)},
                   {"bins", l.bins},
                   {"rows_aggregated", l.rows_aggregated},
                   {"rows", std::move(rows)}});
  }
  return out;
}

}  // namespace

std::string UtilizationReport::sparkline_label(const UtilizationCurve& c) {
  const Sparkline& s = c.sparkline;
  const std::string steps = s.first_step == 0 ? std::string("the whole run")
                            : s.first_step == s.last_step
                                ? fmt::format("step {}", s.first_step)
                                : fmt::format("steps {}-{}", s.first_step, s.last_step);
  return fmt::format("compute, {} (median rank, 1 char = {}):", steps,
                     human_time(static_cast<double>(s.bins.width_ns)));
}

json UtilizationReport::to_json(const UtilizationCurve& c, const std::vector<StepLanes>& lanes) {
  nlohmann::json j = {{"gpu_ranks", c.gpu_ranks}, {"ranks", c.ranks}};
  if (c.gpu_ranks == 0) return j;
  const int64_t o = c.origin_ns;
  j["overview"] = curve_json(c.overview, o);
  nlohmann::json w = curve_json(c.window, o);
  w["first_step"] = c.first_step;
  w["last_step"] = c.last_step;
  w["total_steps"] = c.total_steps;
  w["rows"] = rows_json(c.rows);
  w["rows_aggregated"] = c.rows_aggregated;
  j["window"] = std::move(w);
  j["steps"] = steps_json(c.steps, c.first_step, c.last_step, o);
  nlohmann::json sampled = nlohmann::json::array();
  for (const SampledCurve& s : c.sampled) {
    nlohmann::json e = bins_json(s.bins, o);
    e["period_ms"] = static_cast<double>(s.period_ns) / 1e6;
    e["merged"] = s.merged;
    e["busy_pct"] = pct1(s.busy);
    e["busy_min_pct"] = pct1(s.busy_min);
    e["busy_max_pct"] = pct1(s.busy_max);
    sampled.push_back(std::move(e));
  }
  j["sampled"] = std::move(sampled);
  nlohmann::json spark = bins_json(c.sparkline.bins, o);
  spark["first_step"] = c.sparkline.first_step;
  spark["last_step"] = c.sparkline.last_step;
  spark["compute_pct"] = pct1(c.sparkline.compute);
  j["sparkline"] = std::move(spark);
  j["swimlanes"] = lanes_json(lanes, o);
  nlohmann::json states = nlohmann::json::array();
  for (std::size_t s = 0; s < kLaneStates; ++s)
    states.push_back(to_string(static_cast<LaneState>(s)));
  j["lane_states"] = std::move(states);
  return j;
}

void UtilizationReport::write(const UtilizationCurve& c, const std::vector<StepLanes>& lanes,
                              model::Report& report) {
  report.json["utilization"] = to_json(c, lanes);
  if (c.gpu_ranks == 0 || c.sparkline.compute.empty()) return;
  for (model::Finding& f : report.findings) {
    if (f.source != "pattern") continue;
    f.chart = c.sparkline.compute;
    f.chart_label = sparkline_label(c);
    break;  // the verdict is the pattern's first finding (cross-node lines follow it)
  }
}

}  // namespace ncclwatch::analysis

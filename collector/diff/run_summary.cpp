#include "diff/run_summary.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "analysis/robust_stats.h"
#include "model/robust_spread.h"

namespace ncclwatch::diff {
namespace {

using nlohmann::json;

const json& empty() {
  static const json e;
  return e;
}

// Member `key` of an object, or null (a missing key, or `j` not an object).
const json& at(const json& j, const char* key) {
  if (!j.is_object()) return empty();
  const auto it = j.find(key);
  return it == j.end() ? empty() : *it;
}

std::optional<double> num(const json& j) {
  if (!j.is_number()) return std::nullopt;
  const double v = j.get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}
std::optional<double> num(const json& j, const char* key) {
  return num(at(j, key));
}
double num_or(const json& j, const char* key, double fallback) {
  return num(j, key).value_or(fallback);
}
std::string str(const json& j, const char* key) {
  const json& v = at(j, key);
  return v.is_string() ? v.get<std::string>().substr(0, 512) : std::string();
}
const json& array(const json& j, const char* key) {
  const json& v = at(j, key);
  return v.is_array() ? v : empty();
}

std::string join(const std::set<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

class Reader {
 public:
  Reader(const json& report, RunSummary& out) : r_(report), s_(out) {}

  void missing(const std::string& what, const std::string& consequence) {
    s_.notes.push_back(fmt::format("{} has no {} (written by an older ncclwatch?): {}", s_.side,
                                   what, consequence));
  }

  void read_header() {
    s_.schema_version = static_cast<int>(num_or(r_, "schema_version", 0));
    s_.job = str(r_, "job");
    std::set<std::string> hosts;
    for (const json& rank : array(r_, "ranks")) hosts.insert(str(rank, "host"));
    s_.ranks = array(r_, "ranks").size();
    s_.hosts = hosts.size();
  }

  // breakdown_analysis.steady, or (older reports) the same series rebuilt from breakdown[].
  void read_parts() {
    const json& steady = at(at(r_, "breakdown_analysis"), "steady");
    if (steady.is_object()) {
      s_.basis = str(steady, "basis");
      s_.steps = static_cast<std::size_t>(std::max(0.0, num_or(steady, "steps", 0)));
      s_.step_ranks = static_cast<std::size_t>(std::max(0.0, num_or(steady, "ranks", 0)));
      const json &mean = at(steady, "mean_us"), &spread = at(steady, "spread_us"),
                 &sem = at(steady, "sem_us");
      if (mean.is_object()) {
        for (const auto& [key, v] : mean.items()) {
          const auto m = num(v);
          if (!m || key.size() > 64) continue;
          s_.parts[key] = {*m, std::max(0.0, num_or(spread, key.c_str(), 0)),
                           std::max(0.0, num_or(sem, key.c_str(), 0))};
        }
      }
      if (!s_.parts.empty()) return;
    }
    rebuild_parts_from_rows();
  }

  void rebuild_parts_from_rows() {
    const json& rows = array(r_, "breakdown");
    if (rows.empty()) {
      missing("step breakdown", "step time and its parts are not compared");
      return;
    }
    bool any_gpu = false;
    for (const json& row : rows) any_gpu = any_gpu || str(row, "basis") == "gpu";
    s_.basis = any_gpu ? "gpu" : "host";
    std::vector<std::string> keys = {"step_us"};
    if (any_gpu) {
      for (const StepPart& p : kGpuParts) keys.emplace_back(p.key);
    } else {
      for (const StepPart& p : kHostParts) keys.emplace_back(p.key);
    }
    // step number -> key -> (sum over ranks, ranks)
    std::map<double, std::map<std::string, std::pair<double, double>>> by_step;
    for (const json& row : rows) {
      if (str(row, "basis") != s_.basis) continue;
      ++s_.step_ranks;
      for (const json& e : array(row, "per_step")) {
        if (at(e, "warmup").is_boolean() && at(e, "warmup").get<bool>()) continue;
        const auto step = num(e, "step");
        if (!step) continue;
        for (const std::string& k : keys) {
          if (const auto v = num(e, k.c_str())) {
            auto& cell = by_step[*step][k];
            cell.first += *v;
            cell.second += 1;
          }
        }
      }
    }
    for (const std::string& k : keys) {
      std::vector<double> series;
      for (const auto& [step, cells] : by_step) {
        const auto it = cells.find(k);
        if (it != cells.end() && it->second.second > 0)
          series.push_back(it->second.first / it->second.second);
      }
      if (series.empty()) continue;
      s_.parts[k] = series_figure(series);
      s_.steps = std::max(s_.steps, series.size());
    }
    if (!s_.parts.empty()) {
      s_.parts_estimated = true;
      s_.notes.push_back(fmt::format(
          "{} has no breakdown_analysis.steady (an older ncclwatch): step-to-step spread "
          "estimated from breakdown[].per_step",
          s_.side));
    }
  }

  static Figure series_figure(const std::vector<double>& v) {
    Figure f;
    double sum = 0;
    for (double x : v) sum += x;
    const double n = static_cast<double>(v.size());
    f.value = sum / n;
    double sq = 0;
    for (double x : v) sq += (x - f.value) * (x - f.value);
    f.spread = model::robust_spread(v);
    f.sem = v.size() > 1 ? std::sqrt(sq / (n - 1)) / std::sqrt(n) : 0;
    return f;
  }

  void read_ranks() {
    for (const json& row : array(r_, "breakdown")) {
      RankFigures rf;
      rf.rank = static_cast<int>(num_or(row, "rank", -1));
      rf.host = str(row, "host");
      rf.gpu = str(row, "basis") == "gpu";
      rf.step_us = num_or(row, "step_us", 0);
      rf.compute_us = num_or(row, "compute_us", 0);
      std::vector<double> compute;
      for (const json& e : array(row, "per_step")) {
        const json& w = at(e, "warmup");
        if (w.is_boolean() && w.get<bool>()) continue;
        if (const auto v = num(e, "compute_us")) compute.push_back(*v);
      }
      if (compute.size() > 1) rf.compute_spread_us = series_figure(compute).spread;
      s_.rank_rows.push_back(std::move(rf));
    }
  }

  void read_buckets() {
    const json& list = at(r_, "buckets");
    s_.has_buckets = list.is_array();
    for (const json& b : array(r_, "buckets")) {
      BucketFigures f;
      f.ordinal = static_cast<std::size_t>(std::max(0.0, num_or(b, "ordinal", 0)));
      f.bytes = num_or(b, "bytes", 0);
      f.occurrences = std::max(1.0, num_or(b, "occurrences", 1));
      const double n = f.occurrences;
      const double osd = num_or(b, "overlap_pct_sd", 0), esd = num_or(b, "exposed_us_sd", 0);
      f.overlap_pct = {num_or(b, "overlap_pct", 0), osd, osd / std::sqrt(n)};
      f.exposed_us = {num_or(b, "exposed_us_per_step", 0), esd, esd / std::sqrt(n)};
      s_.buckets.push_back(f);
    }
  }

  void read_busbw() {
    s_.has_busbw = at(r_, "bus_bandwidth").is_array();
    if (!s_.has_busbw) missing("bus_bandwidth table", "bus bandwidth is not compared");
    for (const json& b : array(r_, "bus_bandwidth")) {
      BusbwFigures f;
      f.op = str(b, "op");
      f.scope = str(b, "scope");
      f.size_min = num_or(b, "size_min", 0);
      f.size_max = num_or(b, "size_max", 0);
      f.calls = num_or(b, "calls", 0);
      f.mean_bytes = num_or(b, "mean_bytes", 0);
      f.latency_bound = at(b, "latency_bound").is_boolean() && at(b, "latency_bound").get<bool>();
      f.busbw_gbs = {num_or(b, "busbw_gbs", 0), num_or(b, "spread_gbs", 0),
                     num_or(b, "sem_gbs", 0)};
      if (!f.op.empty() && f.size_min > 0) s_.busbw.push_back(std::move(f));
    }
  }

  // Reports since the findings' cost unit (exposed waiting as a share of the job's rank-time,
  // and that share x the mean step as time per step) write `cost_pct` on every findings[] entry.
  // Older ones counted all waiting, summed over the ranks, as `cost_us_per_step`: their share is
  // kept and the time per step derived from it, so both runs say one thing with one number.
  bool current_cost_unit() const {
    for (const json& f : array(r_, "findings")) {
      if (f.is_object() && f.contains("cost_pct")) return true;
    }
    return false;
  }

  FindingCost cost_of(const json& finding, bool current) const {
    FindingCost c;
    c.pct = std::clamp(num_or(finding, "cost_pct", 0), 0.0, 100.0);
    const double derived = c.pct / 100.0 * s_.step_us();
    c.us_per_step = current ? num_or(finding, "cost_us_per_step", derived) : derived;
    c.us_per_step = std::max(0.0, c.us_per_step);
    return c;
  }

  void read_findings() {
    const bool current = current_cost_unit();
    bool any_cost = false;
    // A finding's cost, and its severity where an older report left it out (warning from 1 %).
    const auto costed = [&](auto& f, const json& finding) {
      f.cost = cost_of(finding, current);
      any_cost = any_cost || f.cost.pct > 0;
      if (f.severity.empty()) f.severity = f.cost.pct >= 1 ? "warning" : "info";
    };
    for (const json& st : array(r_, "stragglers")) {
      StragglerFigures f;
      f.rank = static_cast<int>(num_or(st, "rank", -1));
      f.host = str(st, "host");
      f.cause = str(st, "cause");
      f.pattern = str(st, "pattern");
      f.severity = str(st, "severity");
      f.lateness_us = num_or(st, "lateness_us", 0);
      costed(f, st);
      s_.stragglers.push_back(std::move(f));
    }
    for (const json& l : array(r_, "slow_links")) {
      SlowLinkFigures f;
      f.host = str(l, "host");
      f.severity = str(l, "severity");
      f.slowdown = num_or(l, "slowdown", 0);
      costed(f, l);
      s_.slow_links.push_back(std::move(f));
    }
    if (!current && any_cost) {
      s_.notes.push_back(fmt::format(
          "{} predates the findings' cost unit (written by an older ncclwatch): its stragglers' "
          "and slow links' costs counted all waiting, hidden or not; their time per step is "
          "derived from their share of the step",
          s_.side));
    }
    s_.pattern_row = str(at(r_, "pattern"), "row");
    s_.pattern_text = str(at(r_, "pattern"), "text");
  }

  void read_kernels() {
    const json& list = at(r_, "kernels");
    s_.has_kernels = list.is_array();
    if (!s_.has_kernels) {
      missing("kernels table", "kernels are not compared");
      return;
    }
    const json& ka = at(r_, "kernels_analysis");
    const double steps =
        std::max(1.0, num_or(ka, "rank_steps", 1) / std::max(1.0, num_or(ka, "ranks", 1)));
    s_.kernels_complete = num_or(ka, "names", -1) == num_or(ka, "listed", -2);
    s_.compute_kernels_us = num_or(ka, "compute_us_per_step", 0);
    for (const json& k : list) {
      KernelFigures f;
      f.name = str(k, "name");
      f.nccl = at(k, "nccl").is_boolean() && at(k, "nccl").get<bool>();
      const double spread = num_or(k, "spread_us", 0);
      f.us_per_step = {num_or(k, "us_per_step", 0), spread, spread / std::sqrt(steps)};
      f.calls_per_step = num_or(k, "calls_per_step", 0);
      if (!f.name.empty()) s_.kernels.push_back(std::move(f));
    }
  }

  void read_environment();

 private:
  const json& r_;
  RunSummary& s_;
};

void Reader::read_environment() {
  auto add = [this](const std::string& label, const std::string& value) {
    if (!value.empty()) s_.environment.emplace_back(label, value);
  };
  const json& env = at(r_, "environment");
  add("ranks", std::to_string(s_.ranks));
  add("hosts", std::to_string(s_.hosts));
  std::set<std::string> gpus, nccl, cuda, drivers, nets;
  for (const json& g : array(env, "gpus")) {
    if (g.is_string()) gpus.insert(g.get<std::string>().substr(0, 128));
  }
  const json& topo = at(r_, "topology");
  auto version = [&](const std::string& v) {
    // "2.18.5+cuda12.2": NCCL's version and the CUDA it was built for.
    const std::size_t plus = v.find("+cuda");
    nccl.insert(v.substr(0, plus));
    if (plus != std::string::npos) cuda.insert(v.substr(plus + 5));
  };
  for (const json& v : array(env, "nccl_versions")) {
    if (v.is_string()) version(v.get<std::string>().substr(0, 64));
  }
  for (const json& v : array(at(topo, "parse"), "versions")) {
    if (v.is_string()) version(v.get<std::string>().substr(0, 64));
  }
  for (const json& d : array(at(topo, "environment"), "cuda_driver_versions")) {
    if (d.is_string()) drivers.insert(d.get<std::string>().substr(0, 32));
  }
  add("GPU", join(gpus));
  add("NCCL version", join(nccl));
  add("CUDA (NCCL build)", join(cuda));
  add("CUDA driver", join(drivers));
  const json& algorithms = at(at(r_, "kernels_analysis"), "nccl_algorithms");
  if (algorithms.is_object()) {
    std::vector<std::pair<double, std::string>> shares;
    for (const auto& [name, pct] : algorithms.items()) {
      if (const auto p = num(pct); p && *p >= 1) shares.emplace_back(*p, name.substr(0, 32));
    }
    std::sort(shares.rbegin(), shares.rend());
    std::string text;
    for (const auto& [p, name] : shares)
      text += fmt::format("{}{} {:.0f}%", text.empty() ? "" : ", ", name, p);
    add("NCCL algorithm/protocol (kernel time)", text);
  }
  std::map<std::string, double> transports;
  for (const json& c : array(topo, "comms")) {
    const json& t = at(c, "transports");
    if (t.is_object()) {
      for (const auto& [via, n] : t.items()) transports[via.substr(0, 32)] += num(n).value_or(0);
    }
    for (const json& n : array(c, "nets")) {
      if (n.is_string()) nets.insert(n.get<std::string>().substr(0, 64));
    }
  }
  std::string via;
  for (const auto& [name, count] : transports)
    via += fmt::format("{}{} x{:.0f}", via.empty() ? "" : ", ", name, count);
  add("NCCL transports (channel connections)", via);
  add("NCCL network", join(nets));
  const json& settings = at(at(topo, "environment"), "nccl_settings");
  const bool logs = num_or(at(topo, "parse"), "nccl_lines", 0) > 0;
  if (logs) s_.environment.emplace_back("NCCL logs", "yes");
  if (settings.is_object()) {
    for (const auto& [name, values] : settings.items()) {
      std::set<std::string> v;
      if (values.is_array()) {
        for (const json& x : values) {
          if (x.is_string()) v.insert(x.get<std::string>().substr(0, 200));
        }
      }
      if (name.size() <= 64) add(name, join(v));
    }
  }
}

}  // namespace

double RunSummary::step_us() const {
  const Figure* f = part("step_us");
  return f ? f->value : 0.0;
}

const Figure* RunSummary::part(const std::string& key) const {
  const auto it = parts.find(key);
  return it == parts.end() ? nullptr : &it->second;
}

RunSummary RunSummary::of(const nlohmann::json& report, const std::string& side) {
  RunSummary s;
  s.side = side;
  Reader r(report, s);
  r.read_header();
  r.read_parts();
  r.read_ranks();
  r.read_buckets();
  r.read_busbw();
  r.read_findings();
  r.read_kernels();
  r.read_environment();
  return s;
}

}  // namespace ncclwatch::diff

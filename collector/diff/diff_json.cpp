// `ncclwatch diff --json FILE` (schema: docs/diff.md).
#include "diff/diff_render.h"

namespace ncclwatch::diff {
namespace {

using nlohmann::json;

json figure_json(const std::optional<Figure>& f) {
  if (!f) return nullptr;
  return {{"value", f->value}, {"spread", f->spread}, {"sem", f->sem}};
}

json compared_json(const Compared& c) {
  json j = {{"key", c.key},
            {"label", c.label},
            {"unit", c.unit},
            {"base", figure_json(c.base)},
            {"new", figure_json(c.now)},
            {"significant", c.significant}};
  if (c.both()) {
    j["delta"] = c.delta();
    j["delta_pct"] = c.delta_pct();
    j["noise"] = c.noise;
    j["threshold"] = c.threshold;
  } else {
    j["delta"] = nullptr;
  }
  return j;
}

json list_json(const std::vector<Compared>& list) {
  json out = json::array();
  for (const Compared& c : list) out.push_back(compared_json(c));
  return out;
}

json side_json(const RunSummary& s, const std::string& path, const std::string& kind) {
  return {{"source", path},
          {"kind", kind},
          {"job", s.job},
          {"schema_version", s.schema_version},
          {"ranks", s.ranks},
          {"hosts", s.hosts},
          {"steps", s.steps},
          {"basis", s.basis},
          {"pattern", s.pattern_row}};
}

// The report's own pair of keys for a cost, null in the run the finding is not in.
json cost_json(const std::optional<FindingCost>& cost) {
  if (!cost) return nullptr;
  return {{"cost_pct", cost->pct}, {"cost_us_per_step", cost->us_per_step}};
}

json findings_json(const std::vector<FindingChange>& list) {
  json out = json::array();
  for (const FindingChange& f : list) {
    out.push_back({{"kind", f.kind},
                   {"who", f.who},
                   {"cause", f.cause},
                   {"where", f.where},
                   {"base_cost", cost_json(f.base_cost)},
                   {"new_cost", cost_json(f.new_cost)},
                   {"lateness_us", f.lateness_us},
                   {"flagged", f.flagged}});
  }
  return out;
}

}  // namespace

nlohmann::json render_json(const DiffResult& r, const Sides& sides) {
  json env = json::array();
  for (const EnvChange& e : r.environment) {
    env.push_back({{"label", e.label}, {"base", e.base}, {"new", e.now}, {"changed", e.changed}});
  }
  return {{"diff_version", 1},
          {"verdict", r.verdict},
          {"regression", r.regression},
          {"base", side_json(r.base, sides.base_path, sides.base_kind)},
          {"new", side_json(r.now, sides.new_path, sides.new_kind)},
          {"step", r.comparable_steps ? compared_json(r.step) : json(nullptr)},
          {"parts", list_json(r.parts)},
          {"rank_classes", list_json(r.rank_classes)},
          {"rank_compute", list_json(r.rank_compute)},
          {"buckets", list_json(r.buckets)},
          {"bus_bandwidth", list_json(r.busbw)},
          {"kernels", list_json(r.kernels)},
          {"stragglers", findings_json(r.stragglers)},
          {"slow_links", findings_json(r.slow_links)},
          {"pattern",
           {{"base", r.pattern_base}, {"new", r.pattern_new}, {"flagged", r.pattern_flagged}}},
          {"environment", env},
          {"comm_differs", r.comm_differs},
          {"compute_differs", r.compute_differs},
          {"not_compared", r.not_compared},
          {"notes", r.notes},
          {"flagged", r.flagged_keys()}};
}

}  // namespace ncclwatch::diff

#include "report/json_renderer.h"
#include "model/vocabulary.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ncclwatch::report {

namespace {
using model::severity_name;
}  // namespace

nlohmann::json render_json(const model::Report& report) {
  nlohmann::json j = report.json;
  nlohmann::json findings = nlohmann::json::array();
  for (const model::Finding* f : model::ordered_findings(report.findings)) {
    findings.push_back({{"severity", severity_name(f->severity)},
                        {"source", f->source},
                        {"text", f->text},
                        {"cost_pct", f->cost ? nlohmann::json(f->cost->pct) : nlohmann::json()},
                        {"cost_us_per_step", f->cost ? nlohmann::json(f->cost->ns_per_step / 1000.0)
                                                     : nlohmann::json()}});
  }
  j["findings"] = findings;
  return j;
}

bool write_json(const model::Report& report, const std::string& path, std::string& error) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  // Invalid UTF-8 in host names or kernel names must not make the whole report unwritable.
  out << render_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  if (!out.flush()) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace ncclwatch::report

// The JSON report (docs/report-schema.md): report.json plus the findings, which every part adds
// to report.findings.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/report.h"

namespace ncclwatch::report {

nlohmann::json render_json(const model::Report& report);

// Writes render_json(report) to `path` (indented); false and `error` set when it cannot.
bool write_json(const model::Report& report, const std::string& path, std::string& error);

}  // namespace ncclwatch::report

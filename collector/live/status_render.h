// `ncclwatch status` output: text (one screen) and JSON (schema: docs/report-schema.md, section
// "status").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "live/job_status.h"

namespace ncclwatch::live {

std::string render_status_text(const JobStatus& status);
nlohmann::ordered_json render_status_json(const JobStatus& status);

}  // namespace ncclwatch::live

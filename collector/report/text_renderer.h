// The terminal report: findings first, most severe first (what a person acts on), then every
// section in the order the pipeline added them (ranks, comms, analyses, ..., input problems).
#pragma once

#include <string>

#include "model/report.h"

namespace ncclwatch::report {

struct TextOptions {
  std::size_t max_findings = 20;  // the rest are counted in one line (all are in the JSON)
};

std::string render_text(const model::Report& report, const TextOptions& options = {});

}  // namespace ncclwatch::report

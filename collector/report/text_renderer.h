// The terminal report: findings first, most severe first (what a person acts on), then every
// section in the order the pipeline added them (ranks, comms, analyses, ..., input problems).
#pragma once

#include <cstddef>
#include <string>

#include "model/report.h"
#include "report/text_wrap.h"  // output_width: the width to pass

namespace ncclwatch::report {

struct TextOptions {
  std::size_t max_findings = 20;  // the rest are counted in one line (all are in the JSON)
  // Findings and the prose lines of sections wrapped at spaces to this many columns (findings'
  // continuation lines indented under the source tag, so each still starts with its severity;
  // tables are left alone); 0: not wrapped. The JSON always has the whole texts.
  std::size_t width = 0;
};

std::string render_text(const model::Report& report, const TextOptions& options = {});

}  // namespace ncclwatch::report

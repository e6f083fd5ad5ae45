// The terminal report: findings first, in model::ordered_findings' order (critical, then by
// cost, largest first: what a person acts on), then every section in the order the pipeline
// added them (ranks, comms, analyses, ..., input problems), then a footer naming the glossary.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/report.h"
#include "report/text_wrap.h"  // output_width: the width to pass

namespace ncclwatch::report {

struct TextOptions {
  std::size_t max_findings = 20;  // the rest are counted in one line (all are in the JSON)
  // Findings and the prose lines of sections wrapped at spaces to this many columns (findings'
  // continuation lines indented under the source tag, so each still starts with its severity;
  // tables are left alone); 0: not wrapped. The JSON always has the whole texts.
  std::size_t width = 0;
  bool footer = true;             // the glossary line at the end
  // A finding's chart (model::Finding::chart) as Unicode blocks (▁▂▃▄▅▆▇█); false: ASCII
  // (" .:-=+*#%@"), for a terminal or locale that is not UTF-8.
  bool unicode = true;
};

// The last line of the text report.
inline constexpr const char* kGlossaryFooter =
    "Words and figures of this report (exposed, hidden, wait, pre-comm, step boundary, smi, "
    "useful, late/step, cost, fair%, jitter, σ/MAD, ...): docs/glossary.md in the ncclwatch "
    "sources.";

std::string render_text(const model::Report& report, const TextOptions& options = {});

// One character per value (0..1): a sparkline in blocks, or ASCII.
std::string sparkline(const std::vector<float>& values, bool unicode);

// Whether the user's locale writes UTF-8 (LC_ALL, else LC_CTYPE, else LANG names a UTF-8
// codeset); no locale set means "C": ASCII.
bool locale_is_utf8();

}  // namespace ncclwatch::report

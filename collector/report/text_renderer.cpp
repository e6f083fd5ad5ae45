#include "report/text_renderer.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "report/text_wrap.h"

namespace ncclwatch::report {

namespace {

// Under the "[source]" of a finding: a wrapped finding's lines after the first start here, so
// that every finding still begins with its severity at the left margin.
constexpr std::string_view kContinuation = "         ";

const char* tag(model::Severity s) {
  switch (s) {
    case model::Severity::kCritical:
      return "CRITICAL";
    case model::Severity::kWarning:
      return "WARNING ";
    case model::Severity::kInfo:
      break;
  }
  return "info    ";
}

// A section's body, its prose lines wrapped (tables left alone), ending with '\n'.
std::string wrap_prose(std::string_view body, std::size_t width) {
  std::string out;
  while (!body.empty()) {
    const std::size_t nl = body.find('\n');
    out += wrap_prose_line(body.substr(0, nl), width);
    body = nl == std::string_view::npos ? std::string_view{} : body.substr(nl + 1);
  }
  return out;
}

}  // namespace

std::string sparkline(const std::vector<float>& values, bool unicode) {
  // Level 0 is a blank: a GPU at 0 % shows as a gap, the dip a verdict is about.
  static const char* const kBlocks[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char kAscii[] = " .:-=+*#%@";
  std::string out;
  for (float v : values) {
    const float c = std::clamp(v, 0.0f, 1.0f);
    if (unicode) {
      out += kBlocks[static_cast<int>(c * 8.0f + 0.5f)];
    } else {
      out += kAscii[static_cast<int>(c * 9.0f + 0.5f)];
    }
  }
  return out;
}

bool locale_is_utf8() {
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    std::string s(v);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s.find("utf-8") != std::string::npos || s.find("utf8") != std::string::npos;
  }
  return false;
}

std::string render_text(const model::Report& report, const TextOptions& options) {
  const std::vector<const model::Finding*> sorted = model::ordered_findings(report.findings);
  std::string out;
  std::size_t shown = std::min(sorted.size(), options.max_findings);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::string head = fmt::format("{} [{}] ", tag(sorted[i]->severity), sorted[i]->source);
    out += wrap(head, sorted[i]->text, options.width, kContinuation);
    if (!sorted[i]->chart.empty()) {
      out += fmt::format("{}{} |{}|\n", kContinuation, sorted[i]->chart_label,
                         sparkline(sorted[i]->chart, options.unicode));
    }
  }
  if (sorted.size() > shown)
    out += fmt::format("... {} more findings in the JSON report\n", sorted.size() - shown);
  if (sorted.empty()) out += "no findings\n";
  for (const auto& s : report.sections) {
    if (s.body.find_first_not_of(" \n") == std::string::npos) continue;  // no empty heading
    out += fmt::format("\n== {}\n", s.title);
    out += wrap_prose(s.body, options.width);
  }
  // The words and figures above, defined once (exposed, hidden, pre-comm, smi, useful, ...).
  if (options.footer && !report.sections.empty())
    out += "\n" + wrap_prose(std::string(kGlossaryFooter) + "\n", options.width);
  return out;
}

}  // namespace ncclwatch::report

#include "report/text_renderer.h"

#include <algorithm>
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

std::string render_text(const model::Report& report, const TextOptions& options) {
  const std::vector<const model::Finding*> sorted = model::ordered_findings(report.findings);
  std::string out;
  std::size_t shown = std::min(sorted.size(), options.max_findings);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::string head = fmt::format("{} [{}] ", tag(sorted[i]->severity), sorted[i]->source);
    out += wrap(head, sorted[i]->text, options.width, kContinuation);
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

#include "report/text_renderer.h"

#include <algorithm>

#include <fmt/format.h>

namespace ncclwatch::report {

namespace {
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
}  // namespace

std::string render_text(const model::Report& report, const TextOptions& options) {
  std::vector<const model::Finding*> sorted;
  for (const auto& f : report.findings) sorted.push_back(&f);
  // Stable: within one severity, the order the parts wrote them in (their own priority).
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const model::Finding* a, const model::Finding* b) { return a->severity > b->severity; });
  std::string out;
  std::size_t shown = std::min(sorted.size(), options.max_findings);
  for (std::size_t i = 0; i < shown; ++i) {
    out +=
        fmt::format("{} [{}] {}\n", tag(sorted[i]->severity), sorted[i]->source, sorted[i]->text);
  }
  if (sorted.size() > shown)
    out += fmt::format("... {} more findings in the JSON report\n", sorted.size() - shown);
  if (sorted.empty()) out += "no findings\n";
  for (const auto& s : report.sections) {
    out += fmt::format("\n== {}\n", s.title);
    out += s.body;
    if (!s.body.empty() && s.body.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace ncclwatch::report

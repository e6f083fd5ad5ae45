// ncclwatch's overlap figures for Kineto traces, one JSON line per file, for
// scripts/hta_compare.py: every kernel, and the kernels HTA analyses (last step dropped or kept,
// µs rounding as HTA's default does).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/overlap.h"
#include "kineto/hta_kernel_filter.h"
#include "kineto/kineto_loader.h"

using namespace ncclwatch;

namespace {
std::string pct(double fraction) {
  return std::isnan(fraction) ? "null" : fmt::format("{:.4f}", 100.0 * fraction);
}
}  // namespace

int main(int argc, char** argv) {
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<model::InputProblem> problems;
    auto rank = kineto::load_rank(argv[i], problems);
    for (const auto& p : problems)
      std::fprintf(stderr, "%s: %s\n", p.source.c_str(), p.message.c_str());
    if (!rank) {
      rc = 1;
      continue;
    }
    auto hta = [&](bool last, bool round) {
      return pct(
          analysis::overlap_fraction(kineto::with_hta_kernel_selection(*rank, {last, round})));
    };
    std::printf(
        "{\"file\": \"%s\", \"rank\": %d, \"all_kernels_pct\": %s, \"hta_selection_pct\": %s, "
        "\"hta_selection_with_last_step_pct\": %s, \"hta_selection_us_pct\": %s, "
        "\"hta_selection_with_last_step_us_pct\": %s}\n",
        argv[i], rank->info.rank, pct(analysis::overlap_fraction(*rank)).c_str(),
        hta(false, false).c_str(), hta(true, false).c_str(), hta(false, true).c_str(),
        hta(true, true).c_str());
  }
  return rc;
}

// Straggler findings, the "Stragglers" section and JSON stragglers[] / straggler_analysis.
#pragma once

#include "analysis/straggler_verdict.h"
#include "model/report.h"

namespace ncclwatch::analysis {

class StragglerReport {
 public:
  static void write(const StragglerResult& result, model::Report& report);
  // The finding line for one straggler (exposed for tests).
  static std::string line(const Straggler& s, const std::string& what);
};

}  // namespace ncclwatch::analysis

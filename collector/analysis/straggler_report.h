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
  // "the first all-reduce": where in the step its lateness happens.
  static std::string where(const Straggler& s);
  // "costing 18.0 ms/step of waiting summed over the ranks that waited (4.5% of step time)".
  static std::string cost(const Straggler& s);
};

}  // namespace ncclwatch::analysis

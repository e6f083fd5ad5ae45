// Straggler and slow-link findings, the "Stragglers" section and JSON stragglers[],
// slow_links[] and straggler_analysis.
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
  // The numbers behind its cause, and the finding's clause ("its GPU idles 7.9 ms/step ...").
  static std::string evidence(const Straggler& s);
  static std::string because(const Straggler& s);
  // The finding line for a slow network link.
  static std::string link_line(const SlowLink& l);

 private:
  static void write_findings(const StragglerResult& r, model::Report& report);
  static void write_section(const StragglerResult& r, model::Report& report);
  static void write_json(const StragglerResult& r, model::Report& report);
};

}  // namespace ncclwatch::analysis

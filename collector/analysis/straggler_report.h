// Straggler and slow-link findings, the "Stragglers" section and JSON stragglers[],
// slow_links[] and straggler_analysis.
#pragma once

#include "analysis/data_support.h"
#include "analysis/straggler_verdict.h"
#include "model/report.h"

namespace ncclwatch::analysis {

class StragglerReport {
 public:
  // `support`: single-rank inputs get no cross-rank claim; a straggler on a rank that lost much
  // of its trace is information, naming the loss.
  static void write(const StragglerResult& result, const DataSupport& support,
                    model::Report& report);
  // The finding line for one straggler (exposed for tests).
  static std::string line(const Straggler& s, const std::string& what);
  // "the first all-reduce": where in the step its lateness happens.
  static std::string where(const Straggler& s);
  // "costing 4.5 ms/step (4.5% of step time) in exposed waiting": the findings' cost unit.
  static std::string cost(const Straggler& s);
  static std::string cost_words(double pct, double ns_per_step);
  // The cause in words, one vocabulary with `cause` (to_string) everywhere: "slow GPU (clocks,
  // thermals, a noisy neighbour?)", "extra GPU work (evaluation?)", ...
  static std::string cause_text(const Straggler& s);
  // The numbers behind its cause, and the finding's clause ("its GPU idles 7.9 ms/step ...").
  static std::string evidence(const Straggler& s);
  static std::string because(const Straggler& s);
  // The finding line for a slow network link.
  static std::string link_line(const SlowLink& l);

 private:
  static void write_findings(const StragglerResult& r, const DataSupport& support,
                             model::Report& report);
  static void write_section(const StragglerResult& r, const DataSupport& support,
                            model::Report& report);
  static void write_json(const StragglerResult& r, model::Report& report);
};

}  // namespace ncclwatch::analysis

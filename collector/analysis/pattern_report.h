// The pattern verdict's finding (source "pattern"), one finding per tensor-parallel-like
// communicator that spans nodes, and JSON pattern / cross_node_comms[]. All of the verdict's
// prose is written here, from the figures PatternVerdict carries.
#pragma once

#include <string>
#include <vector>

#include "analysis/cross_node_comm.h"
#include "analysis/data_support.h"
#include "analysis/straggler_verdict.h"
#include "analysis/utilization_pattern.h"
#include "model/report.h"

namespace ncclwatch::analysis {

class PatternReport {
 public:
  // `stragglers`: the result the verdict was judged with (named in the lagging row and in the
  // side note of a stall's row).
  // `support`: what the data supports (not-judged reasons, sampled compute, lossy ranks: a
  // warning over them becomes information naming the loss).
  static void write(const PatternVerdict& verdict, const StragglerResult& stragglers,
                    const std::vector<CrossNodeComm>& comms, const DataSupport& support,
                    model::Report& report);
  // The finding's text for the verdict's row (and where sampled figures come from).
  static std::string text(const PatternVerdict& verdict, const StragglerResult& stragglers,
                          const DataSupport& support = {});
  // The finding's cost per step: the straggler's own figure for the lagging row, else the
  // verdict's share of the mean step.
  static double cost_ns_per_step(const PatternVerdict& verdict, const StragglerResult& stragglers);
  static std::string cross_node_line(const CrossNodeComm& c);

 private:
  static std::string row_text(const PatternVerdict& verdict, const StragglerResult& stragglers,
                              const DataSupport& support);
};

}  // namespace ncclwatch::analysis

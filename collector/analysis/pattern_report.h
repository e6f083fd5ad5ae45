// The pattern verdict's finding (source "pattern"), one finding per tensor-parallel-like
// communicator that spans nodes, and JSON pattern / cross_node_comms[].
#pragma once

#include <vector>

#include "analysis/cross_node_comm.h"
#include "analysis/utilization_pattern.h"
#include "model/report.h"

namespace ncclwatch::analysis {

class PatternReport {
 public:
  static void write(const PatternVerdict& verdict, const std::vector<CrossNodeComm>& comms,
                    model::Report& report);
  static std::string cross_node_line(const CrossNodeComm& c);
};

}  // namespace ncclwatch::analysis

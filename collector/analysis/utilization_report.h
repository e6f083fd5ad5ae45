// The utilization curve (utilization_curve.h) and the one-step swimlanes (step_swimlane.h) into
// the report: JSON `utilization` (docs/report-schema.md), drawn by the HTML page, and the
// sparkline under the pattern verdict's finding (model::Finding::chart) for the text report.
#pragma once

#include <string>
#include <vector>

#include "analysis/step_swimlane.h"
#include "analysis/utilization_curve.h"
#include "model/report.h"

namespace ncclwatch::analysis {

class UtilizationReport {
 public:
  static void write(const UtilizationCurve& curve, const std::vector<StepLanes>& lanes,
                    model::Report& report);
  static nlohmann::json to_json(const UtilizationCurve& curve, const std::vector<StepLanes>& lanes);
  // "compute, steps 5-8, job median, 1 char = 2.2 ms:" (what the sparkline shows).
  static std::string sparkline_label(const UtilizationCurve& curve);
};

}  // namespace ncclwatch::analysis

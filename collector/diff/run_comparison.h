// Two runs' report JSON in, the whole comparison out (diff_result.h).
#pragma once

#include <nlohmann/json.hpp>

#include "diff/diff_result.h"

namespace ncclwatch::diff {

DiffResult compare_runs(RunSummary base, RunSummary now);
inline DiffResult compare_reports(const nlohmann::json& base, const nlohmann::json& now) {
  return compare_runs(RunSummary::of(base, "BASE"), RunSummary::of(now, "NEW"));
}

}  // namespace ncclwatch::diff

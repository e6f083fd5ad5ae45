// The environment each run recorded, side by side (RunSummary::environment): a value one run
// did not record is "" (unknown), except an NCCL_* variable of a run whose NCCL logs are there,
// which NCCL did not report as set: "(unset)".
#include <algorithm>

#include "diff/comparisons.h"

namespace ncclwatch::diff {
namespace {

const std::string* find(const RunSummary& s, const std::string& label) {
  for (const auto& [l, v] : s.environment) {
    if (l == label) return &v;
  }
  return nullptr;
}

std::string value_of(const RunSummary& s, const std::string& label) {
  if (const std::string* v = find(s, label)) return *v;
  if (label.rfind("NCCL_", 0) == 0 && find(s, "NCCL logs")) return "(unset)";
  return "";
}

}  // namespace

void compare_environment(DiffResult& r) {
  std::vector<std::string> labels;
  for (const RunSummary* s : {&r.base, &r.now}) {
    for (const auto& [label, v] : s->environment) {
      if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
    }
  }
  for (const std::string& label : labels) {
    if (label == "NCCL logs") continue;
    EnvChange e{label, value_of(r.base, label), value_of(r.now, label), false};
    e.changed = !e.base.empty() && !e.now.empty() && e.base != e.now;
    r.environment.push_back(std::move(e));
  }
}

}  // namespace ncclwatch::diff

#include "diff/run_comparison.h"

#include "diff/comparisons.h"

namespace ncclwatch::diff {

DiffResult compare_runs(RunSummary base, RunSummary now) {
  DiffResult r;
  r.base = std::move(base);
  r.now = std::move(now);
  for (const RunSummary* s : {&r.base, &r.now}) {
    r.notes.insert(r.notes.end(), s->notes.begin(), s->notes.end());
  }
  match_jobs(r);
  compare_steps(r);
  compare_communication(r);
  compare_findings(r);
  compare_kernels(r);
  compare_environment(r);
  r.verdict = verdict_line(r);
  r.regression = r.step.significant && r.step.delta() > 0;
  return r;
}

std::vector<std::string> DiffResult::flagged_keys() const {
  std::vector<std::string> out;
  auto add = [&out](const std::vector<Compared>& list) {
    for (const Compared& c : list) {
      if (c.significant) out.push_back(c.key);
    }
  };
  if (step.significant) out.push_back(step.key);
  add(parts);
  add(rank_classes);
  add(rank_compute);
  add(buckets);
  add(busbw);
  add(kernels);
  for (const auto* list : {&stragglers, &slow_links}) {
    for (const FindingChange& f : *list) {
      if (f.flagged) out.push_back(f.kind + ":" + f.who + ":" + f.where);
    }
  }
  if (pattern_flagged) out.push_back("pattern");
  return out;
}

}  // namespace ncclwatch::diff

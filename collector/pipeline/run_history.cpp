#include "pipeline/run_history.h"

#include <algorithm>
#include <memory>

namespace ncclwatch::pipeline {

namespace {

// A rank's summaries the loader kept (a whole-run window: rank_loader.h).
class KeptSteps : public history::StepSource {
 public:
  explicit KeptSteps(const std::vector<format::StepRecord>& steps) : steps_(steps) {}
  bool next(format::StepRecord& out) override {
    if (at_ >= steps_.size()) return false;
    out = steps_[at_++];
    return true;
  }

 private:
  const std::vector<format::StepRecord>& steps_;
  std::size_t at_ = 0;
};

bool whole_run_window(const model::RankTrace& r) {
  return !r.steps.empty() &&
         std::any_of(r.windows.begin(), r.windows.end(), [](const model::WindowMark& w) {
           return w.trigger == format::WindowTrigger::kWholeRun;
         });
}

}  // namespace

RunHistory read_run_history(const model::JobTrace& job) {
  RunHistory run;
  run.windows = history::join_windows(job);
  // Layout versions 1-4 have no window and no summary: nothing to read.
  if (run.windows.empty()) return run;
  std::vector<history::RankSource> sources;
  for (const model::RankTrace& r : job.ranks) {
    history::RankSource s;
    s.rank = r.info.rank;
    s.host = r.info.host;
    s.wall_offset_ns = r.info.wall_offset_ns;
    if (!r.info.source.empty()) s.parts.push_back(r.info.source);
    sources.push_back(std::move(s));
  }
  if (std::all_of(job.ranks.begin(), job.ranks.end(), whole_run_window)) {
    // The loader kept them: no second pass over files that hold the whole run's detail.
    std::vector<std::unique_ptr<history::StepSource>> kept;
    for (const model::RankTrace& r : job.ranks)
      kept.push_back(std::make_unique<KeptSteps>(r.steps));
    run.history = history::build_history(std::move(sources), kept);
  } else {
    run.history = history::build_history(std::move(sources), run.problems);
  }
  return run;
}

}  // namespace ncclwatch::pipeline

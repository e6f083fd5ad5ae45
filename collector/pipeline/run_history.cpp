#include "pipeline/run_history.h"

#include <algorithm>
#include <memory>

#include "trace/job_loader.h"

namespace ncclwatch::pipeline {

namespace {

// A rank's summaries the loader kept (a whole-run window: rank_loader.h), and its GPU-timing
// decision as StepStream finds it in the files: the first of reason auto or setting.
class KeptSteps : public history::StepSource {
 public:
  explicit KeptSteps(const model::RankTrace& rank) : steps_(rank.steps) {
    for (const format::GpuTimingRecord& g : rank.gpu_timing) {
      if (history::is_gpu_decision(g)) {
        decision_ = &g;
        break;
      }
    }
  }
  bool next(format::StepRecord& out) override {
    if (at_ >= steps_.size()) return false;
    out = steps_[at_++];
    return true;
  }
  const format::GpuTimingRecord* gpu_decision() const override { return decision_; }

 private:
  const std::vector<format::StepRecord>& steps_;
  const format::GpuTimingRecord* decision_ = nullptr;
  std::size_t at_ = 0;
};

// The loader kept every valid summary of the rank: none is left in its files alone. Not "some
// steps": a rank whose every summary failed validation has none to keep, and its files none to
// give either; a report of node files without the traces beside them (multi-node.md) has only
// what was kept.
bool steps_all_kept(const model::RankTrace& r) {
  return r.steps_not_kept == 0 &&
         std::any_of(r.windows.begin(), r.windows.end(), [](const model::WindowMark& w) {
           return w.trigger == format::WindowTrigger::kWholeRun;
         });
}

// The trace files of the rank loaded from `source` (its parts, NCCLWATCH_MAX_MB), as the loader
// chose them.
std::vector<std::string> parts_of(const trace::JobIndex& index, const std::string& source) {
  for (const trace::TraceFileEntry& e : index.files) {
    if (std::find(e.parts.begin(), e.parts.end(), source) != e.parts.end()) return e.parts;
  }
  return source.empty() ? std::vector<std::string>{} : std::vector<std::string>{source};
}

}  // namespace

RunHistory read_run_history(const model::JobTrace& job, const std::string& dir) {
  RunHistory run;
  run.windows = history::join_windows(job);
  // Layout versions 1-4 have no window and no summary: nothing to read.
  if (run.windows.empty()) return run;
  trace::JobLoadOptions options;
  options.job = job.job;
  const trace::JobIndex index = trace::index_job(dir, options);
  std::vector<history::RankSource> sources;
  for (const model::RankTrace& r : job.ranks) {
    history::RankSource s;
    s.rank = r.info.rank;
    s.host = r.info.host;
    s.wall_offset_ns = r.info.wall_offset_ns;
    s.parts = parts_of(index, r.info.source);
    sources.push_back(std::move(s));
  }
  if (std::all_of(job.ranks.begin(), job.ranks.end(), steps_all_kept)) {
    // The loader kept them: no second pass over files that hold the whole run's detail.
    std::vector<std::unique_ptr<history::StepSource>> kept;
    for (const model::RankTrace& r : job.ranks) kept.push_back(std::make_unique<KeptSteps>(r));
    run.history = history::build_history(std::move(sources), kept);
  } else {
    run.history = history::build_history(std::move(sources), run.problems);
  }
  return run;
}

}  // namespace ncclwatch::pipeline

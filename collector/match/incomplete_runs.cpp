#include "match/incomplete_runs.h"

#include <algorithm>

namespace ncclwatch::match {

IncompleteRuns::IncompleteRuns(uint64_t comm_id, std::vector<int32_t> member_ranks,
                               uint32_t max_runs)
    : comm_id_(comm_id),
      member_ranks_(std::move(member_ranks)),
      max_runs_(std::max<std::size_t>(max_runs, kKeepFirst + 1)) {}

void IncompleteRuns::add(uint64_t seq, format::Func func, const std::vector<uint8_t>& present) {
  if (open_ && func == func_ && present == present_) {
    last_ = seq;
    ++count_;
    return;
  }
  close();
  open_ = true;
  first_ = last_ = seq;
  count_ = 1;
  func_ = func;
  present_ = present;
}

void IncompleteRuns::close() {
  if (!open_) return;
  open_ = false;
  model::IncompleteInstance run;
  run.comm_id = comm_id_;
  run.seq = first_;
  run.seq_last = last_;
  run.count = count_;
  run.func = func_;
  for (std::size_t i = 0; i < present_.size(); ++i) {
    (present_[i] ? run.present_ranks : run.missing_ranks).push_back(member_ranks_[i]);
  }
  if (runs_.size() >= max_runs_) {
    // Keep the first few (where trouble started) and the latest (where the job stopped).
    runs_.erase(runs_.begin() + kKeepFirst);
    ++omitted_;
  }
  runs_.push_back(std::move(run));
}

uint64_t IncompleteRuns::finish(std::vector<model::IncompleteInstance>& out) {
  close();
  for (auto& r : runs_) out.push_back(std::move(r));
  runs_.clear();
  return omitted_;
}

}  // namespace ncclwatch::match

#include "history/step_stream.h"

#include "trace/record_check.h"

namespace ncclwatch::history {

StepStream::StepStream(std::vector<std::string> parts) : parts_(std::move(parts)) {}

bool StepStream::open_next_part() {
  while (next_part_ < parts_.size()) {
    const std::string& path = parts_[next_part_++];
    if (reader_.open(path)) return true;
    problems_.push_back(path + ": " + reader_.error());
  }
  return false;
}

bool StepStream::next(format::StepRecord& out) {
  for (;;) {
    while (at_ < chunk_.size()) {
      const format::Record& r = chunk_[at_++];
      if (r.prefix.kind == format::RecordKind::kGpuTiming && !has_decision_ &&
          history::is_gpu_decision(r.gpu_timing) && trace::record_problem(r) == nullptr) {
        decision_ = r.gpu_timing;
        has_decision_ = true;
      }
      if (r.prefix.kind != format::RecordKind::kStep) continue;
      if (trace::record_problem(r) != nullptr) {
        ++skipped_;
        continue;
      }
      out = r.step;
      return true;
    }
    if (open_) {
      chunk_ = reader_.next();
      at_ = 0;
      if (!chunk_.empty()) continue;
      open_ = false;
    }
    if (!open_next_part()) return false;
    open_ = true;
    chunk_ = {};
    at_ = 0;
  }
}

}  // namespace ncclwatch::history

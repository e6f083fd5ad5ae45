// A rank's trace as parts under a disk budget (docs/always-on.md, "The disk budget"): records are
// appended to the current part; a part that reaches part_bytes is closed and the next one opened
// (part 0 is ncclwatch.<host>.<pid>.trace, part n ncclwatch.<host>.<pid>.<n>.trace, each a whole
// trace file with ProcessInfo::part set). When the parts together pass the budget, the oldest
// part that still holds detail records is rewritten with its always-tier records only (next to
// it, then renamed over it: a reader never sees half of it), its header counting what went
// (losses.detail_evicted), so the oldest detail goes first and the summaries stay. A short job
// never rolls over: one file, as before. Drain thread only (and finish(), after it stopped).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ncclwatch/format.h"
#include "record/trace_writer.h"

namespace ncclwatch::shim {

class TraceParts {
 public:
  struct Options {
    std::string dir;  // absolute
    std::string host;
    int64_t pid = 0;
    uint64_t budget_bytes = 256ULL << 20;
  };
  // Size at which a part is closed: an eighth of the budget (at least 64 KiB), so the budget
  // holds several parts and evicting one frees at most an eighth of it.
  static uint64_t part_bytes_for(uint64_t budget_bytes) {
    return budget_bytes / 8 > (64u << 10) ? budget_bytes / 8 : (64u << 10);
  }

  ~TraceParts();
  TraceParts(const TraceParts&) = delete;
  TraceParts& operator=(const TraceParts&) = delete;

  // Creates part 0. `segment` gives the identity and timing mode for the headers of the parts
  // closed while the process runs, and says which part is written now (ProcessInfo::part, for
  // salvage); it outlives this object. nullptr + *error on failure.
  static std::unique_ptr<TraceParts> open(const Options& options, format::SegmentHeader* segment,
                                          std::string* error);

  // Appends to the current part, then closes it and opens the next when it is full. false on a
  // write error (errno set; the caller says so once and stops writing).
  bool append(const format::Record* records, uint64_t n);

  // While the parts pass the budget, removes the detail of the oldest part that has any. Returns
  // the detail records removed. *line (when not null) gets one `ncclwatch:` line, once, when the
  // summaries alone pass the budget or a part cannot be rewritten.
  uint64_t enforce_budget(std::string* line);

  // The current part and its record count (the drain checkpoint).
  uint32_t part() const { return current_->part(); }
  uint64_t part_records() const { return current_->records(); }
  uint64_t bytes() const;
  std::size_t parts() const { return closed_.size() + 1; }
  const std::string& first_path() const { return first_path_; }

  // Closes the current part with the process's final counts (state closed).
  bool close(const format::ProcessInfo& process, uint64_t dropped, uint64_t cupti_dropped,
             uint32_t mode, uint32_t kernel_filter, const format::LossCounts& losses);
  // Forked child: forget everything without touching the files.
  void abandon();

 private:
  struct Part {
    uint32_t index = 0;
    std::string name;
    uint64_t bytes = 0;
    bool detail = false;  // holds detail records (not yet evicted)
  };
  TraceParts() = default;
  bool roll();
  bool compact(Part& part, uint64_t* removed, std::string* error);
  std::string name_of(uint32_t part) const;

  Options options_;
  uint64_t part_bytes_ = 0;
  format::SegmentHeader* segment_ = nullptr;
  int dir_fd_ = -1;
  std::string first_path_;
  std::vector<Part> closed_;
  std::unique_ptr<TraceWriter> current_;
  bool current_detail_ = false;
  bool said_summaries_ = false;
  bool said_failed_ = false;
};

}  // namespace ncclwatch::shim

// One rank's step summaries read from its trace files (parts, oldest first) with a small buffer:
// the history holds one of these per rank at a time. Summaries that fail validation
// (trace/record_check.h) are skipped and counted; an unreadable file is one problem line. One
// file is open per stream at a time (build_history raises the soft descriptor limit to fit).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "history/history.h"
#include "trace/trace_file_reader.h"

namespace ncclwatch::history {

class StepStream : public StepSource {
 public:
  static constexpr std::size_t kChunkRecords = 256;  // 16 KiB per rank

  explicit StepStream(std::vector<std::string> parts);

  bool next(format::StepRecord& out) override;
  const format::GpuTimingRecord* gpu_decision() const override {
    return has_decision_ ? &decision_ : nullptr;
  }

  const std::vector<std::string>& problems() const { return problems_; }
  uint64_t skipped() const { return skipped_; }

 private:
  bool open_next_part();

  std::vector<std::string> parts_;
  std::size_t next_part_ = 0;
  trace::TraceFileReader reader_{kChunkRecords};
  bool open_ = false;
  std::span<const format::Record> chunk_;
  std::size_t at_ = 0;
  uint64_t skipped_ = 0;
  bool has_decision_ = false;
  format::GpuTimingRecord decision_{};
  std::vector<std::string> problems_;
};

}  // namespace ncclwatch::history

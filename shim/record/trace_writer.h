// The rank's trace file <dir>/ncclwatch.<host>.<pid>.trace: a TraceHeader (state open), then
// records appended as the drain thread takes them from the ring. close() rewrites the header in
// place with the final counts and state closed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

class TraceWriter {
 public:
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Creates the directory (mkdir -p) and the file, part `part` of the process's trace (format.h,
  // ProcessInfo::part in the header). nullptr + *error on failure.
  static std::unique_ptr<TraceWriter> open(const std::string& path,
                                           const format::ProcessInfo& process, std::string* error,
                                           uint32_t part = 0);

  // Appends records; false on a write error (the caller reports once and stops writing).
  bool append(const format::Record* records, uint64_t n);

  // Rewrites the header: final process info, counts, state closed. Closes the file.
  bool close(const format::ProcessInfo& process, uint64_t dropped, uint64_t cupti_dropped,
             uint32_t mode, uint32_t kernel_filter, const format::LossCounts& losses);

  // Closes the descriptor without touching the file (forked child).
  void abandon();

  uint64_t records() const { return records_; }
  uint64_t bytes() const { return sizeof(format::TraceHeader) + records_ * sizeof(format::Record); }
  const std::string& path() const { return path_; }
  uint32_t part() const { return part_; }

 private:
  TraceWriter() = default;
  int fd_ = -1;
  uint32_t part_ = 0;
  uint64_t records_ = 0;
  std::string path_;
};

// mkdir -p; false with errno set on failure.
bool make_directories(const std::string& path);

}  // namespace ncclwatch::shim

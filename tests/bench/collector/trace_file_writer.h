// One rank's trace file written straight from format.h, streaming (a fixed buffer whatever the
// size): the header first, records appended, the header rewritten with the count and state on
// finish() -- what the shim's drain thread leaves behind. For the generators of the collector
// and scale benchmarks.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::bench {

class TraceFileWriter {
 public:
  // Throws std::runtime_error when the file cannot be created.
  TraceFileWriter(const std::string& path, const format::TraceHeader& header,
                  std::size_t buffer_records = 16384);
  ~TraceFileWriter();
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  void put(const format::Record& r) {
    buf_.push_back(r);
    if (buf_.size() == chunk_) flush();
  }
  // Closes the file with the header saying closed and how many records; the bytes written.
  // Throws std::runtime_error when a write failed (disk full?).
  uint64_t finish();
  // Records put so far.
  uint64_t count() const { return count_ + buf_.size(); }

 private:
  void flush();
  std::FILE* f_ = nullptr;
  format::TraceHeader header_;
  std::vector<format::Record> buf_;
  std::size_t chunk_;
  uint64_t count_ = 0;
};

// The StringRecords of `text` with id `id` (chunked like the shim's string table).
void put_string(TraceFileWriter& w, uint32_t id, const std::string& text);

}  // namespace ncclwatch::bench

// Streaming reader of one trace file: checks the header, then hands out records in chunks of a
// fixed-size buffer, so a file of any size is read in bounded memory. It never trusts the file:
// a bad header makes open() fail with one line; a torn last record, a record count that
// disagrees with the header, or a file cut short while being read become warnings and every
// whole record before them is still delivered. Per-record validation is record_check.h's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::trace {

class TraceFileReader {
 public:
  static constexpr std::size_t kDefaultChunkRecords = 16384;  // 1 MiB per read

  explicit TraceFileReader(std::size_t chunk_records = kDefaultChunkRecords);
  ~TraceFileReader();
  TraceFileReader(TraceFileReader&& other) noexcept;
  TraceFileReader& operator=(TraceFileReader&& other) noexcept;
  TraceFileReader(const TraceFileReader&) = delete;
  TraceFileReader& operator=(const TraceFileReader&) = delete;

  // Opens `path` and checks its header. false: error() says why, foreign() if it is not an
  // ncclwatch trace at all. A symbolic link is not followed and anything but a regular file
  // (a FIFO, a device) is refused without blocking: trace dirs may hold names planted by others.
  bool open(const std::string& path);
  // The same on a descriptor the caller opened (and checked); the reader takes it over.
  bool adopt(int fd, const std::string& path);

  const std::string& path() const { return path_; }
  const format::TraceHeader& header() const { return header_; }
  bool foreign() const { return foreign_; }
  const std::string& error() const { return error_; }
  // Lines about a usable file: torn tail, count mismatch, not closed, read errors.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Whole records after the header when the file was opened (a torn tail is not counted).
  uint64_t record_count() const { return record_count_; }
  bool torn_tail() const { return torn_bytes_ != 0; }
  // Header state says closed or salvaged (the writer finished).
  bool closed() const;

  // The next chunk of records; empty at the end (or after a read error, added to warnings()).
  std::span<const format::Record> next();
  // Index of the record next() hands out first.
  uint64_t position() const { return position_; }
  // Starts over at the first record.
  void rewind() { position_ = 0; }
  // Continues at record `position` (clamped to the end): a reader that has seen a file's first
  // records reads only what was appended since (`ncclwatch status --watch`).
  void seek(uint64_t position) { position_ = position < record_count_ ? position : record_count_; }

 private:
  void reset(const std::string& path);
  void close();

  std::string path_;
  int fd_ = -1;
  format::TraceHeader header_{};
  bool foreign_ = false;
  std::string error_;
  std::vector<std::string> warnings_;
  uint64_t record_count_ = 0;
  uint64_t torn_bytes_ = 0;
  uint64_t position_ = 0;
  // Sized at open() to min(chunk, records) and left uninitialised: a small file costs no 1 MiB
  // allocation and zeroing (thousands of small ranks).
  std::size_t chunk_records_;
  std::unique_ptr<format::Record[]> buffer_;
  std::size_t buffer_size_ = 0;
};

}  // namespace ncclwatch::trace

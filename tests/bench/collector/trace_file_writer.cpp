#include "trace_file_writer.h"

#include <algorithm>
#include <stdexcept>

#include "record_builder.h"

namespace ncclwatch::bench {

TraceFileWriter::TraceFileWriter(const std::string& path, const format::TraceHeader& header,
                                 std::size_t buffer_records)
    : header_(header), chunk_(std::max<std::size_t>(buffer_records, 1)) {
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr) throw std::runtime_error("cannot write " + path);
  std::fwrite(&header_, sizeof header_, 1, f_);
  buf_.reserve(chunk_);
}

TraceFileWriter::~TraceFileWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

void TraceFileWriter::flush() {
  if (!buf_.empty() &&
      std::fwrite(buf_.data(), sizeof(format::Record), buf_.size(), f_) != buf_.size()) {
    throw std::runtime_error("write failed (disk full?)");
  }
  count_ += buf_.size();
  buf_.clear();
}

uint64_t TraceFileWriter::finish() {
  flush();
  header_.records = count_;
  header_.state = format::kTraceStateClosed;
  std::fseek(f_, 0, SEEK_SET);
  std::fwrite(&header_, sizeof header_, 1, f_);
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) throw std::runtime_error("write failed (disk full?)");
  return sizeof header_ + count_ * sizeof(format::Record);
}

void put_string(TraceFileWriter& w, uint32_t id, const std::string& text) {
  for (const format::Record& r : test_support::string_records(id, text)) w.put(r);
}

}  // namespace ncclwatch::bench

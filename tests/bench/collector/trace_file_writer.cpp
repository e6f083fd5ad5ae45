#include "trace_file_writer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

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

format::Record blank_record(format::RecordKind kind, uint32_t tid) {
  format::Record r;
  std::memset(&r, 0, sizeof r);
  r.prefix.kind = kind;
  r.prefix.tid = tid;
  return r;
}

void put_string(TraceFileWriter& w, uint32_t id, const std::string& text) {
  const std::size_t chunks =
      std::min(format::kMaxStringChunks,
               std::max<std::size_t>(
                   1, (text.size() + format::kStringChunkBytes - 1) / format::kStringChunkBytes));
  for (std::size_t c = 0; c < chunks; ++c) {
    format::Record r = blank_record(format::RecordKind::kString, id);
    r.prefix.u8a = static_cast<uint8_t>(c);
    if (c + 1 == chunks) r.prefix.flags = format::kStringLastChunk;
    const std::size_t at = c * format::kStringChunkBytes;
    if (at < text.size())
      std::memcpy(r.string.text, text.data() + at,
                  std::min(format::kStringChunkBytes, text.size() - at));
    w.put(r);
  }
}

}  // namespace ncclwatch::bench

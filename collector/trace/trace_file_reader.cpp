#include "trace/trace_file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "trace/read_fully.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::trace {
namespace {

constexpr uint64_t kHeaderSize = sizeof(format::TraceHeader);

}  // namespace

TraceFileReader::TraceFileReader(std::size_t chunk_records)
    : chunk_records_(chunk_records == 0 ? 1 : chunk_records) {}

TraceFileReader::~TraceFileReader() {
  close();
}

TraceFileReader::TraceFileReader(TraceFileReader&& other) noexcept {
  *this = std::move(other);
}

TraceFileReader& TraceFileReader::operator=(TraceFileReader&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    header_ = other.header_;
    foreign_ = other.foreign_;
    error_ = std::move(other.error_);
    warnings_ = std::move(other.warnings_);
    record_count_ = other.record_count_;
    torn_bytes_ = other.torn_bytes_;
    position_ = other.position_;
    chunk_records_ = other.chunk_records_;
    buffer_ = std::move(other.buffer_);
    buffer_size_ = std::exchange(other.buffer_size_, 0);
  }
  return *this;
}

void TraceFileReader::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool TraceFileReader::closed() const {
  return header_.state == format::kTraceStateClosed || header_.state == format::kTraceStateSalvaged;
}

// Forgets the previous file: every open starts from nothing known.
void TraceFileReader::reset(const std::string& path) {
  close();
  path_ = path;
  header_ = {};
  foreign_ = false;
  error_.clear();
  warnings_.clear();
  record_count_ = torn_bytes_ = position_ = 0;
}

bool TraceFileReader::open(const std::string& path) {
  reset(path);

  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    error_ = errno == ELOOP ? "a symbolic link (not followed: give the file it points to)"
                            : fmt::format("cannot open: {}", std::strerror(errno));
    return false;
  }
  return adopt(fd, path);
}

bool TraceFileReader::adopt(int fd, const std::string& path) {
  reset(path);
  fd_ = fd;
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    error_ = S_ISFIFO(st.st_mode) ? "a FIFO, not a regular file" : "not a regular file";
    close();
    return false;
  }
  // Reads of a regular file never block; the flag only kept open() from hanging on a FIFO.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  const auto size = static_cast<uint64_t>(st.st_size);
  const ssize_t got = read_fully(fd_, &header_, sizeof header_, 0);
  if (got < 0) {
    error_ = fmt::format("cannot read header: {}", std::strerror(errno));
    close();
    return false;
  }
  if (static_cast<uint64_t>(got) < kHeaderSize) {
    // A header cut short: ours if the magic made it to disk, foreign otherwise.
    if (got >= 8 && header_.magic != format::kTraceMagic) {
      foreign_ = true;
      error_ = fmt::format("not an ncclwatch trace (bad magic {})", hex(header_.magic));
    } else {
      error_ = fmt::format("truncated: header incomplete ({} of {} bytes)", got, kHeaderSize);
    }
    close();
    return false;
  }
  HeaderVerdict verdict = check_trace_header(header_);
  if (!verdict.usable) {
    foreign_ = verdict.foreign;
    error_ = std::move(verdict.error);
    close();
    return false;
  }
  warnings_ = std::move(verdict.warnings);

  record_count_ = (size - kHeaderSize) / format::kRecordSize;
  torn_bytes_ = (size - kHeaderSize) % format::kRecordSize;
  if (torn_bytes_ != 0) {
    warnings_.push_back(
        fmt::format("truncated: last record torn ({} of {} bytes), dropped after {} records",
                    torn_bytes_, format::kRecordSize, record_count_));
  }
  if (closed()) {
    if (header_.records > record_count_) {
      warnings_.push_back(fmt::format("truncated: header says {} records, file holds {}",
                                      header_.records, record_count_));
    } else if (header_.records < record_count_) {
      warnings_.push_back(fmt::format("header says {} records, file holds {} (all kept)",
                                      header_.records, record_count_));
    }
  } else {
    warnings_.push_back(
        "not closed: the writer died or is still running (`ncclwatch collect` salvages its "
        "segment)");
  }
  const std::size_t want =
      static_cast<std::size_t>(std::min<uint64_t>(chunk_records_, record_count_));
  if (want > buffer_size_ || want == 0) {
    buffer_.reset(want == 0 ? nullptr : new format::Record[want]);
    buffer_size_ = want;
  }
  return true;
}

std::span<const format::Record> TraceFileReader::next() {
  if (fd_ < 0 || position_ >= record_count_) return {};
  const uint64_t want = std::min<uint64_t>(buffer_size_, record_count_ - position_);
  const uint64_t offset = kHeaderSize + position_ * format::kRecordSize;
  const ssize_t got = read_fully(fd_, buffer_.get(), want * format::kRecordSize, offset);
  if (got < 0) {
    warnings_.push_back(
        fmt::format("read error after {} records: {}", position_, std::strerror(errno)));
    record_count_ = position_;
    return {};
  }
  const uint64_t whole = static_cast<uint64_t>(got) / format::kRecordSize;
  if (whole < want) {
    // The file shrank under us (rewritten or truncated by someone): keep what was whole.
    warnings_.push_back(
        fmt::format("truncated while reading: file ends after {} records", position_ + whole));
    record_count_ = position_ + whole;
  }
  position_ += whole;
  return {buffer_.get(), static_cast<std::size_t>(whole)};
}

}  // namespace ncclwatch::trace

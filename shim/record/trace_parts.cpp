#include "record/trace_parts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "ncclwatch/names.h"
#include "ncclwatch/settings_table.h"

namespace ncclwatch::shim {
namespace {

constexpr std::size_t kCopyChunk = 8192;  // records per read while compacting

bool has_detail(const format::Record* records, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (format::is_detail_kind(records[i].prefix.kind)) return true;
  return false;
}

bool write_at(int fd, const void* data, std::size_t size, off_t offset) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += n;
  }
  return true;
}

ssize_t read_at(int fd, void* data, std::size_t size, off_t offset) {
  for (;;) {
    const ssize_t n = ::pread(fd, data, size, offset);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

// The part's file is still the one this process wrote: a regular file of this user, its header
// ours (the directory may be shared: docs/threat-model.md).
bool is_our_part(int fd, const format::TraceHeader& h, const format::ProcessInfo& self,
                 uint32_t part) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
         h.magic == format::kTraceMagic && h.layout_version == format::kLayoutVersion &&
         h.process.pid == self.pid && h.process.part == part &&
         std::strncmp(h.process.host, self.host, sizeof h.process.host) == 0;
}

}  // namespace

TraceParts::~TraceParts() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::string TraceParts::name_of(uint32_t part) const {
  return format::trace_file_name(options_.host, options_.pid, part);
}

std::unique_ptr<TraceParts> TraceParts::open(const Options& options, format::SegmentHeader* segment,
                                             std::string* error) {
  std::unique_ptr<TraceParts> t(new TraceParts());
  t->options_ = options;
  t->part_bytes_ = part_bytes_for(options.budget_bytes);
  t->segment_ = segment;
  t->first_path_ = options.dir + "/" + t->name_of(0);
  t->current_ = TraceWriter::open(t->first_path_, segment->process, error, 0);
  if (!t->current_) return nullptr;
  t->dir_fd_ = ::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (t->dir_fd_ < 0) {
    *error = "cannot open directory " + options.dir + ": " + std::strerror(errno);
    return nullptr;
  }
  return t;
}

uint64_t TraceParts::bytes() const {
  uint64_t n = current_ ? current_->bytes() : 0;
  for (const Part& p : closed_) n += p.bytes;
  return n;
}

bool TraceParts::append(const format::Record* records, uint64_t n) {
  if (n == 0) return true;
  if (!current_->append(records, n)) return false;
  if (!current_detail_ && has_detail(records, n)) current_detail_ = true;
  if (current_->bytes() >= part_bytes_) return roll();
  return true;
}

// Closes the current part (no counts: the last part carries the process's) and opens the next.
bool TraceParts::roll() {
  const format::ProcessInfo process = segment_->process;
  Part done;
  done.index = current_->part();
  done.name = name_of(done.index);
  done.bytes = current_->bytes();
  done.detail = current_detail_;
  const uint32_t mode = std::atomic_ref<uint32_t>(segment_->mode).load();
  const uint32_t filter = std::atomic_ref<uint32_t>(segment_->kernel_filter).load();
  if (!current_->close(process, 0, 0, mode, filter, format::LossCounts{})) return false;
  closed_.push_back(done);
  std::string error;
  const uint32_t next = done.index + 1;
  current_ = TraceWriter::open(options_.dir + "/" + name_of(next), process, &error, next);
  current_detail_ = false;
  if (!current_) {
    errno = errno != 0 ? errno : EIO;
    return false;
  }
  // Salvage completes the part the segment names (format.h, ProcessInfo::part).
  std::atomic_ref<uint32_t>(segment_->process.part).store(next, std::memory_order_release);
  return true;
}

uint64_t TraceParts::enforce_budget(std::string* line) {
  uint64_t removed_total = 0;
  for (int guard = 0; guard < 64 && bytes() > options_.budget_bytes; ++guard) {
    Part* oldest = nullptr;
    for (Part& p : closed_) {
      if (p.detail) {
        oldest = &p;
        break;
      }
    }
    if (oldest == nullptr) {
      // The current part's detail can go once it is closed.
      if (current_detail_ && current_->records() != 0) {
        if (!roll()) break;
        continue;
      }
      if (!said_summaries_ && line != nullptr) {
        said_summaries_ = true;
        *line = "ncclwatch: " + first_path_ + ": the step summaries alone pass " +
                std::string(settings::name(settings::Id::kMaxMb)) + "=" +
                std::to_string(options_.budget_bytes >> 20) + "; they are kept\n";
      }
      break;
    }
    uint64_t removed = 0;
    std::string error;
    if (!compact(*oldest, &removed, &error)) {
      oldest->detail = false;  // not tried again
      if (!said_failed_ && line != nullptr) {
        said_failed_ = true;
        *line = "ncclwatch: cannot remove old detail from " + options_.dir + "/" + oldest->name +
                " (" + error + "); the trace may pass " +
                std::string(settings::name(settings::Id::kMaxMb)) + "\n";
      }
      continue;
    }
    removed_total += removed;
  }
  return removed_total;
}

// Rewrites a closed part with its always-tier records only: written to "<name>.compacting" (its
// header last, and not named *.trace: no reader takes it for a trace), then renamed over the part.
bool TraceParts::compact(Part& part, uint64_t* removed, std::string* error) {
  const int in = ::openat(dir_fd_, part.name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) {
    *error = std::strerror(errno);
    return false;
  }
  format::TraceHeader header{};
  if (read_at(in, &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
      !is_our_part(in, header, segment_->process, part.index)) {
    ::close(in);
    *error = "it is no longer the file this process wrote";
    return false;
  }
  const std::string tmp = part.name + ".compacting";
  ::unlinkat(dir_fd_, tmp.c_str(), 0);
  const int out =
      ::openat(dir_fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (out < 0) {
    *error = std::strerror(errno);
    ::close(in);
    return false;
  }
  std::vector<format::Record> buffer(kCopyChunk);
  uint64_t kept = 0, dropped = 0;
  off_t at = sizeof header;
  bool ok = true;
  for (;;) {
    const ssize_t n = read_at(in, buffer.data(), buffer.size() * sizeof(format::Record), at);
    if (n < 0) ok = false;
    if (n <= 0) break;
    at += n;
    const std::size_t records = static_cast<std::size_t>(n) / sizeof(format::Record);
    std::size_t m = 0;
    for (std::size_t i = 0; i < records; ++i) {
      if (format::is_detail_kind(buffer[i].prefix.kind)) {
        ++dropped;
      } else {
        buffer[m++] = buffer[i];
      }
    }
    if (!write_at(out, buffer.data(), m * sizeof(format::Record),
                  static_cast<off_t>(sizeof header + kept * sizeof(format::Record)))) {
      ok = false;
      break;
    }
    kept += m;
  }
  ::close(in);
  header.records = kept;
  header.losses.detail_evicted += dropped;
  ok = ok && write_at(out, &header, sizeof header, 0);
  ok = ::close(out) == 0 && ok;
  if (!ok || ::renameat(dir_fd_, tmp.c_str(), dir_fd_, part.name.c_str()) != 0) {
    *error = std::strerror(errno);
    ::unlinkat(dir_fd_, tmp.c_str(), 0);
    return false;
  }
  part.detail = false;
  part.bytes = sizeof header + kept * sizeof(format::Record);
  *removed = dropped;
  return true;
}

bool TraceParts::close(const format::ProcessInfo& process, uint64_t dropped, uint64_t cupti_dropped,
                       uint32_t mode, uint32_t kernel_filter, const format::LossCounts& losses) {
  return current_->close(process, dropped, cupti_dropped, mode, kernel_filter, losses);
}

void TraceParts::abandon() {
  current_->abandon();
  if (dir_fd_ >= 0) ::close(dir_fd_);
  dir_fd_ = -1;
}

}  // namespace ncclwatch::shim

#include "record/trace_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ncclwatch::shim {
namespace {

bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Creates `name` in `dir` as a new file, never through a symlink (the trace dir may be
// writable by others, who may plant one at our predictable name: docs/threat-model.md). A
// leftover file of an earlier process with our pid is removed first, which only works for a
// name we may remove (not another user's in a sticky dir). -1 with errno set on failure.
int create_exclusive(const std::string& dir, const std::string& name) {
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return -1;
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
  int fd = ::openat(dir_fd, name.c_str(), kFlags, 0644);
  if (fd < 0 && errno == EEXIST && ::unlinkat(dir_fd, name.c_str(), 0) == 0)
    fd = ::openat(dir_fd, name.c_str(), kFlags, 0644);
  const int err = errno;
  ::close(dir_fd);
  errno = err;
  return fd;
}

}  // namespace

bool make_directories(const std::string& path) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TraceWriter::~TraceWriter() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<TraceWriter> TraceWriter::open(const std::string& path,
                                               const format::ProcessInfo& process,
                                               std::string* error, uint32_t part) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (!dir.empty() && !make_directories(dir)) {
    *error = "cannot create directory " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  int fd = create_exclusive(dir.empty() ? "/" : dir,
                            slash == std::string::npos ? path : path.substr(slash + 1));
  if (fd < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  format::TraceHeader header = format::trace_header(format::kTraceStateOpen, process);
  header.process.part = part;
  if (!write_all(fd, &header, sizeof header)) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<TraceWriter> w(new TraceWriter());
  w->fd_ = fd;
  w->path_ = path;
  w->part_ = part;
  return w;
}

bool TraceWriter::append(const format::Record* records, uint64_t n) {
  if (fd_ < 0) return false;
  if (!write_all(fd_, records, n * sizeof(format::Record))) return false;
  records_ += n;
  return true;
}

bool TraceWriter::close(const format::ProcessInfo& process, uint64_t dropped,
                        uint64_t cupti_dropped, uint32_t mode, uint32_t kernel_filter,
                        const format::LossCounts& losses) {
  if (fd_ < 0) return false;
  format::TraceHeader header = format::trace_header(format::kTraceStateClosed, process);
  header.process.part = part_;
  header.records = records_;
  header.dropped = dropped;
  header.cupti_dropped = cupti_dropped;
  header.mode = mode;
  header.kernel_filter = kernel_filter;
  header.losses = losses;
  bool ok = ::pwrite(fd_, &header, sizeof header, 0) == static_cast<ssize_t>(sizeof header);
  ::close(fd_);
  fd_ = -1;
  return ok;
}

void TraceWriter::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace ncclwatch::shim

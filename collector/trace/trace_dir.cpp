#include "trace/trace_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace ncclwatch::trace {

TraceDir::~TraceDir() {
  if (fd_ >= 0) ::close(fd_);
}

bool TraceDir::open(const std::string& path) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  path_ = path;
  error_.clear();
  if (path.empty() || path[0] != '/') {
    error_ = fmt::format("trace dir '{}' is not an absolute path", path);
    return false;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    error_ = fmt::format("cannot open trace dir {}: {}", path, std::strerror(errno));
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    error_ = fmt::format("trace dir {} is not a directory", path);
    ::close(fd);
    return false;
  }
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    error_ = fmt::format("trace dir {} belongs to uid {}, not to you (uid {}) or root; not written",
                         path, st.st_uid, me);
    ::close(fd);
    return false;
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    error_ = fmt::format(
        "trace dir {} is writable by everyone without the sticky bit (mode {:o}); not written",
        path, st.st_mode & 07777);
    ::close(fd);
    return false;
  }
  fd_ = fd;
  return true;
}

TraceDir::Opened TraceDir::open_existing(const std::string& name, int flags, int& fd,
                                         std::string& why) const {
  fd = ::openat(fd_, name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Opened::kMissing;
    why = errno == ELOOP ? fmt::format("{} is a symbolic link; not followed", file(name))
                         : fmt::format("cannot open {}: {}", file(name), std::strerror(errno));
    return Opened::kRefused;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    why = fmt::format("cannot stat {}: {}", file(name), std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    why = fmt::format("{} is not a regular file; not touched", file(name));
  } else if (st.st_uid != ::geteuid()) {
    why = fmt::format("{} belongs to uid {}, not to you; not touched", file(name), st.st_uid);
  } else if (st.st_nlink != 1) {
    why = fmt::format("{} has {} hard links; not touched", file(name), st.st_nlink);
  } else {
    return Opened::kOk;
  }
  ::close(fd);
  fd = -1;
  return Opened::kRefused;
}

int TraceDir::create(const std::string& name, mode_t mode, std::string& why) const {
  const int fd = ::openat(fd_, name.c_str(),
                          O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) why = fmt::format("cannot create {}: {}", file(name), std::strerror(errno));
  return fd;
}

bool is_name_part(const std::string& text) {
  if (text.empty() || text == "." || text == "..") return false;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace ncclwatch::trace

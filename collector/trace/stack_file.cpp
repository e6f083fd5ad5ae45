#include "trace/stack_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "ncclwatch/names.h"
#include "trace/python_stack.h"
#include "trace/trace_dir.h"

namespace ncclwatch::trace {
namespace {

constexpr std::string_view kFirstLine = "# ncclwatch python stack";

// A header value: one line, printable, bounded (it ends up in a terminal).
std::string one_line(std::string_view s) {
  std::string out(s.substr(0, 400));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return out;
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads at most kMaxStackFileBytes + 1 bytes (one more says "too large").
bool read_bounded(int fd, std::string& text) {
  text.clear();
  char buf[16384];
  while (text.size() <= kMaxStackFileBytes) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

bool parse_int(const std::string& s, int64_t& v) {
  if (s.empty() || s.size() > 19) return false;
  std::size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  int64_t out = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  v = s[0] == '-' ? -out : out;
  return true;
}

}  // namespace

std::string stack_file_name(const std::string& host, int64_t pid) {
  return "ncclwatch." + format::sanitize_name(host) + "." + std::to_string(pid) + ".stack.txt";
}

std::string render_stack_file(const StackFileHeader& h, const std::string& dump) {
  return fmt::format("{}\n# job: {}\n# rank: {}\n# host: {}\n# pid: {}\n# taken: {}\n# why: {}\n{}",
                     kFirstLine, one_line(h.job), h.rank, one_line(h.host), h.pid,
                     one_line(h.taken), one_line(h.why), dump);
}

bool write_stack_file(const std::string& dir, const std::string& name, const std::string& text,
                      std::string* error) {
  std::error_code ec;
  TraceDir d;  // checked like salvage's: ours or root's, not writable by others unless sticky
  if (!d.open(std::filesystem::absolute(dir, ec).lexically_normal().string())) {
    *error = d.error();
    return false;
  }
  const std::string tmp = fmt::format(".{}.{}.tmp", name, ::getpid());
  ::unlinkat(d.fd(), tmp.c_str(), 0);  // our own leftover (this pid's name): never written through
  std::string why;
  const int fd = d.create(tmp, 0644, why);
  if (fd < 0) {
    *error = why;
    return false;
  }
  bool ok = write_all(fd, text);
  int err = errno;
  ok = ::close(fd) == 0 && ok;
  // The rename replaces whatever has the name (a planted symlink included) without following it.
  if (ok && ::renameat(d.fd(), tmp.c_str(), d.fd(), name.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlinkat(d.fd(), tmp.c_str(), 0);
    *error = fmt::format("{}: {}", d.file(name), std::strerror(err));
  }
  return ok;
}

SavedStack parse_stack_file(const std::string& text) {
  SavedStack s;
  s.present = true;
  std::size_t at = text.find('\n');
  if (at == std::string::npos || std::string_view(text).substr(0, at) != kFirstLine) {
    s.note = "not an ncclwatch stack file (first line)";
    return s;
  }
  bool have_pid = false;
  for (++at; at < text.size() && text.compare(at, 2, "# ") == 0;) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) {
      s.note = "truncated in its header";
      return s;
    }
    const std::string_view line(text.data() + at + 2, nl - at - 2);
    at = nl + 1;
    const auto colon = line.find(": ");
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string value = one_line(line.substr(colon + 2));
    int64_t n = 0;
    if (key == "job") s.header.job = value;
    if (key == "host") s.header.host = value;
    if (key == "taken") s.header.taken = value;
    if (key == "why") s.header.why = value;
    if (key == "rank" && parse_int(value, n) && n >= -1 && n < (int64_t{1} << 31))
      s.header.rank = static_cast<int32_t>(n);
    if (key == "pid" && parse_int(value, n) && n > 0) {
      s.header.pid = n;
      have_pid = true;
    }
  }
  if (!have_pid) {
    s.note = "no pid in its header";
    return s;
  }
  s.dump = text.substr(std::min(at, text.size()));
  if (parse_py_spy_dump(s.dump).threads.empty()) {
    s.note = "no Python thread in it (empty or truncated)";
    return s;
  }
  s.usable = true;
  return s;
}

SavedStack read_stack_file(const std::string& dir, const std::string& host, int64_t pid,
                           const std::string& job) {
  SavedStack s;
  const std::string name = stack_file_name(host, pid);
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return s;
  const int fd =
      ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  const int open_errno = errno;
  ::close(dir_fd);
  if (fd < 0) {
    if (open_errno == ENOENT) return s;
    s.present = true;
    s.note = open_errno == ELOOP ? name + ": a symlink, not followed"
                                 : fmt::format("{}: {}", name, std::strerror(open_errno));
    return s;
  }
  struct stat st {};
  std::string text;
  std::string why;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    why = fmt::format("owned by uid {}, not by you", st.st_uid);
  } else if (static_cast<uint64_t>(st.st_size) > kMaxStackFileBytes) {
    why = fmt::format("{} bytes, more than a stack file's {}", st.st_size, kMaxStackFileBytes);
  } else if (!read_bounded(fd, text)) {
    why = std::strerror(errno);
  } else if (text.size() > kMaxStackFileBytes) {
    why = "grew past a stack file's size while read";
  }
  ::close(fd);
  if (!why.empty()) {
    s.present = true;
    s.note = name + ": " + why;
    return s;
  }
  s = parse_stack_file(text);
  if (s.usable && (s.header.pid != pid ||
                   format::sanitize_name(s.header.host) != format::sanitize_name(host))) {
    s.usable = false;
    s.note =
        fmt::format("written for host {} pid {}, not this rank's", s.header.host, s.header.pid);
  } else if (s.usable && !job.empty() && s.header.job != job) {
    s.usable = false;
    s.note = fmt::format("written for job {}, not {}", s.header.job, one_line(job));
  }
  if (!s.note.empty() && !s.note.starts_with(name)) s.note = name + ": " + s.note;
  return s;
}

}  // namespace ncclwatch::trace

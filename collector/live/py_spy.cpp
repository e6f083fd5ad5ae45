#include "live/py_spy.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace ncclwatch::live {
namespace {

constexpr std::size_t kMaxOutput = 1 << 20;

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The first non-empty line of `text`, printable and bounded.
std::string first_line(const std::string& text) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(at, std::min<std::size_t>(nl - at, 300));
    at = nl + 1;
    for (char& c : line)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = ' ';
    if (line.find_first_not_of(' ') != std::string::npos) return line;
  }
  return "";
}

// Reads both pipes until they close or `deadline`; true if they closed in time.
bool drain(int out_fd, int err_fd, std::string& out, std::string& err,
           std::chrono::steady_clock::time_point deadline) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* into[2] = {&out, &err};
  int open = 2;
  char buf[16384];
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int r = ::poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open;
        continue;
      }
      if (into[i]->size() < kMaxOutput)
        into[i]->append(
            buf, std::min<std::size_t>(static_cast<std::size_t>(n), kMaxOutput - into[i]->size()));
    }
  }
  return true;
}

}  // namespace

std::string find_py_spy(const std::string& path) {
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t colon = path.find(':', at);
    if (colon == std::string::npos) colon = path.size();
    const std::string dir = path.substr(at, colon - at);
    at = colon + 1;
    if (dir.empty()) continue;  // "" would be the working directory: not searched
    const std::string candidate = dir + "/py-spy";
    if (executable_file(candidate)) return candidate;
  }
  return "";
}

std::string find_py_spy() {
  const char* path = std::getenv("PATH");
  return find_py_spy(path != nullptr ? path : "");
}

std::string py_spy_hint() {
  return "Python stacks need py-spy on PATH: `pip install py-spy` (and the right to trace the "
         "ranks: the same user with kernel.yama.ptrace_scope 0, or root / CAP_SYS_PTRACE)";
}

PySpyResult run_py_spy(const std::string& py_spy, int64_t pid, std::chrono::milliseconds timeout) {
  PySpyResult res;
  // Everything the child needs, made before fork (no allocation between fork and exec).
  const std::string pid_text = std::to_string(pid);
  std::vector<const char*> argv = {py_spy.c_str(),     "dump", "--pid", pid_text.c_str(),
                                   "--full-filenames", nullptr};
  std::vector<const char*> envp;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) envp.push_back(*e);
  envp.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    res.error = fmt::format("pipe: {}", std::strerror(errno));
    return res;
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    res.error = fmt::format("pipe: {}", std::strerror(errno));
    ::close(out[0]);
    ::close(out[1]);
    return res;
  }
  const pid_t child = ::fork();
  if (child == 0) {
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(py_spy.c_str(), const_cast<char* const*>(argv.data()),
             const_cast<char* const*>(envp.data()));
    _exit(127);
  }
  const int fork_errno = errno;
  ::close(out[1]);
  ::close(err[1]);
  if (child < 0) {
    ::close(out[0]);
    ::close(err[0]);
    res.error = fmt::format("fork: {}", std::strerror(fork_errno));
    return res;
  }
  std::string errors;
  const bool in_time =
      drain(out[0], err[0], res.dump, errors, std::chrono::steady_clock::now() + timeout);
  ::close(out[0]);
  ::close(err[0]);
  if (!in_time) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!in_time) {
    res.error = fmt::format("py-spy did not answer within {} s", timeout.count() / 1000);
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = first_line(errors);
    if (why.empty()) why = first_line(res.dump);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && why.empty()) why = "cannot run it";
    res.error = "py-spy failed" + (why.empty() ? std::string() : ": " + why);
    if (why.find("ermission") != std::string::npos ||
        why.find("not permitted") != std::string::npos)
      res.error +=
          " (py-spy needs the right to trace the process: the same user with "
          "kernel.yama.ptrace_scope 0, or root / CAP_SYS_PTRACE)";
  } else {
    res.ok = true;
  }
  return res;
}

}  // namespace ncclwatch::live

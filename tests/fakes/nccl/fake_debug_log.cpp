#include "fake_debug_log.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fakenccl {

namespace {

std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "unknown";
  std::string h(host);
  return h.substr(0, h.find('.'));  // as NCCL's getHostName(..., '.')
}

// NCCL_DEBUG_FILE with %h, %p and %% expanded.
std::string debug_file(const char* pattern) {
  std::string out;
  for (const char* p = pattern; *p != '\0'; ++p) {
    if (*p != '%' || p[1] == '\0') {
      out += *p;
      continue;
    }
    ++p;
    if (*p == 'h') {
      out += host_name();
    } else if (*p == 'p') {
      out += std::to_string(getpid());
    } else {
      out += *p;
    }
  }
  return out;
}

bool level_warns(const char* level) {
  return level != nullptr && (strcasecmp(level, "WARN") == 0 || strcasecmp(level, "INFO") == 0 ||
                              strcasecmp(level, "TRACE") == 0);
}

}  // namespace

void warn_at_init(int rank, int device) {
  const char* message = std::getenv("FAKE_NCCL_WARN");
  if (message == nullptr || *message == '\0' || !level_warns(std::getenv("NCCL_DEBUG"))) return;
  if (const char* only = std::getenv("FAKE_NCCL_WARN_RANK"); only != nullptr && atoi(only) != rank)
    return;
  char line[1024];
  const int n = std::snprintf(line, sizeof line, "\n%s:%d:%ld [%d] init.cc:1404 NCCL WARN %s\n",
                              host_name().c_str(), static_cast<int>(getpid()),
                              static_cast<long>(syscall(SYS_gettid)), device, message);
  if (n <= 0) return;
  const std::size_t size = std::min(static_cast<std::size_t>(n), sizeof line - 1);
  const char* file = std::getenv("NCCL_DEBUG_FILE");
  const int fd =
      file != nullptr && *file != '\0'
          ? ::open(debug_file(file).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)
          : STDOUT_FILENO;
  if (fd < 0) return;
  if (::write(fd, line, size) < 0) {
    // nothing to do: a log NCCL cannot write is lost for NCCL too
  }
  if (fd != STDOUT_FILENO) ::close(fd);
}

}  // namespace fakenccl

#include "nsys/nsys_rep.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace ncclwatch::nsys {

bool is_report_name(const std::string& path) {
  return path.ends_with(".nsys-rep") || path.ends_with(".qdrep");
}

std::string find_nsys() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::string_view rest(path);
  while (true) {
    const std::size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (!dir.empty()) {
      const std::string exe = dir + "/nsys";
      struct stat st {};
      if (::stat(exe.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(exe.c_str(), X_OK) == 0)
        return exe;
    }
    if (colon == std::string_view::npos) return {};
    rest.remove_prefix(colon + 1);
  }
}

std::string export_hint(const std::string& report) {
  return fmt::format(
      "an Nsight Systems report: nsys is not on PATH here, so export it where nsys is installed "
      "with `nsys export --type sqlite --output {0}.sqlite {0}` and give ncclwatch the .sqlite",
      report);
}

bool export_report(const std::string& nsys, const std::string& report, const std::string& out,
                   std::string& error, int timeout_s) {
  std::vector<std::string> args = {
      nsys, "export", "--type", "sqlite", "--output", out, "--force-overwrite", "true", report};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    error = fmt::format("cannot start nsys: {}", std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      error = fmt::format("waiting for nsys: {}", std::strerror(errno));
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      error = fmt::format("nsys export did not finish within {} s", timeout_s);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = WIFEXITED(status)
                ? fmt::format("nsys export failed (exit status {})", WEXITSTATUS(status))
                : fmt::format("nsys export killed by signal {}", WTERMSIG(status));
    return false;
  }
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "nsys export wrote no SQLite file";
    return false;
  }
  return true;
}

}  // namespace ncclwatch::nsys

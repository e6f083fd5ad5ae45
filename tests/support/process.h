// Process helpers for the tests that run our programs as a user would (tests/tools, tests/e2e,
// tests/shim/nccl): a scratch directory, a command line run through /bin/sh with its output
// captured, a program run with fork + execve (no shell), a file's contents.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace ncclwatch::test_support {

namespace fs = std::filesystem;

// A fresh directory under the system's temp dir (mkdtemp: private, unique), removed with all it
// holds when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The whole contents of a file ("" when it cannot be read).
std::string slurp(const fs::path& p);
// The whole contents of `f` from its start (a std::tmpfile() a report was written to); closes it.
std::string slurp(std::FILE* f);

struct CommandResult {
  int rc = -1;  // exit status; -1 when the shell itself did not exit normally
  std::string out, err;
};

// Runs `command` with /bin/sh; stdout and stderr are captured through files in `scratch`
// (overwritten by the next call). With `stdout_to` set, stdout goes to that file instead and
// `out` stays empty.
CommandResult run_shell(const std::string& command, const fs::path& scratch,
                        const std::string& stdout_to = "");

// Runs a program (fork + execve, no shell: preloading through /bin/sh breaks sanitized runs)
// with extra environment variables (KEY=VALUE, replacing an inherited KEY); stdout and stderr
// together go to `output` when given. Returns its exit status (128 + signal if signalled).
int run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                std::string* output = nullptr);

// Starts a program (fork + execv, no shell) with stderr to `stderr_path` and stdout to /dev/null,
// without waiting: its pid, for waitpid (-1 when fork failed). The multi-rank tests start
// fake_launcher this way and wait while they watch the job.
pid_t start_process(const std::vector<std::string>& argv, const std::string& stderr_path);

}  // namespace ncclwatch::test_support

// Runs `py-spy dump` on a process (docs/always-on.md, "Where a stuck rank is"). Only the CLI
// does (`ncclwatch status --stacks`, `ncclwatch run`'s watchdog): the shim never forks or runs
// anything inside the application. py-spy is a PyPI wheel (`pip install py-spy`), found on PATH;
// it needs the right to ptrace the process (same user and kernel.yama.ptrace_scope 0, or root /
// CAP_SYS_PTRACE).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ncclwatch::live {

// The py-spy executable in the directories of `path` (a PATH value), "" if none.
std::string find_py_spy(const std::string& path);

// The py-spy of this process's PATH, "" if none.
std::string find_py_spy();

// The one line said when py-spy is missing: how to get it.
std::string py_spy_hint();

struct PySpyResult {
  bool ok = false;
  std::string dump;   // what it printed (at most 1 MiB)
  std::string error;  // why not ok, one line
};

// `py_spy dump --pid PID --full-filenames`, killed after `timeout`. Runs without LD_PRELOAD (the
// shim must not record py-spy into the job). Safe to call from a thread of a multi-threaded
// program (nothing but async-signal-safe calls between fork and exec).
PySpyResult run_py_spy(const std::string& py_spy, int64_t pid, std::chrono::milliseconds timeout);

}  // namespace ncclwatch::live

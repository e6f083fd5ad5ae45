// libFuzzer target: arbitrary bytes as a trace file through load_rank and the dump formatter.
// Invariants: no crash, no sanitizer report, and every converted value passed validation.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trace/dump.h"
#include "trace/rank_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An in-memory file, opened by path like any trace.
  const int fd = ::memfd_create("trace_reader_fuzz", 0);
  if (fd < 0) return 0;
  if (size != 0 && ::write(fd, data, size) != static_cast<ssize_t>(size)) {
    ::close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::vector<ncclwatch::model::InputProblem> problems;
  const auto trace = ncclwatch::trace::load_rank(path, problems);
  for (const auto& c : trace.calls) {
    if (c.exit_ns < c.enter_ns) std::abort();
  }
  for (const auto& k : trace.kernels) {
    if (k.name >= trace.names.size() || k.end_ns < k.start_ns) std::abort();
  }
  std::FILE* sink = std::fopen("/dev/null", "w");
  if (sink != nullptr) {
    ncclwatch::trace::dump_trace(path, {}, sink, sink);
    std::fclose(sink);
  }
  ::close(fd);
  return 0;
}

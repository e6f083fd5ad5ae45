// libFuzzer target: arbitrary bytes as a trace file through load_rank and the dump formatter.
// Invariants: no crash, no sanitizer report, and every converted value passed validation.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trace/dump.h"
#include "trace/rank_loader.h"

namespace {
// A private temp file, rewritten for each input: readers open trace files by path with
// O_NOFOLLOW, so the input cannot be a /proc/self/fd/N link.
const std::string& input_path() {
  static const std::string path = [] {
    static char dir[] = "/tmp/trace_reader_fuzz.XXXXXX";
    if (::mkdtemp(dir) == nullptr) std::abort();
    std::atexit([] {
      ::unlink((std::string(dir) + "/input.trace").c_str());
      ::rmdir(dir);
    });
    return std::string(dir) + "/input.trace";
  }();
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = input_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  const bool written = size == 0 || std::fwrite(data, 1, size, f) == size;
  std::fclose(f);
  if (!written) return 0;
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
  return 0;
}

// Speed of reading an Nsight Systems SQLite export: rows read per CPU second of the loading
// threads (every row of the kernel, memcpy, memset, runtime and NVTX tables the reader goes
// through), and peak RSS. The input is the tests' fixture (tests/collector/nsys/nsys_fixture.h):
// 8 processes of NCCLWATCH_NSYS_BENCH_STEPS steps (default 5000: 1.1 M rows), written once per
// run into $TMPDIR. The `nsys stats` route could not be compared here: nsys is not installed.
#include <sys/resource.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "nsys/nsys_loader.h"
#include "nsys_fixture.h"

namespace {

using namespace ncclwatch;

struct Input {
  std::string path;
  uint64_t rows = 0;
  std::size_t kernels = 0;
};

const Input& input() {
  static const Input in = [] {
    Input r;
    const char* env = std::getenv("NCCLWATCH_NSYS_BENCH_STEPS");
    nsys::testing::FixtureSpec spec;
    spec.steps = env != nullptr ? std::atoi(env) : 5000;
    spec.nccl_nvtx = true;
    spec.processes.clear();
    for (int p = 0; p < 8; ++p) spec.processes.push_back({1000 + p, p});
    r.path = (std::filesystem::temp_directory_path() / "ncclwatch_nsys_bench.sqlite").string();
    r.kernels = nsys::testing::write_nsys_export(r.path, spec);
    return r;
  }();
  return in;
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void BM_NsysLoad(benchmark::State& state) {
  const Input& in = input();
  uint64_t rows = 0;
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = cpu_seconds();
    model::JobTrace job = nsys::load_job({in.path});
    cpu += cpu_seconds() - c0;
    if (job.ranks.size() != 8 || !job.problems.empty()) state.SkipWithError("bad load");
    for (const auto& r : job.ranks) rows = r.info.records;
    benchmark::DoNotOptimize(job);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["rows_per_cpu_s"] =
      cpu > 0 ? static_cast<double>(rows) * static_cast<double>(state.iterations()) / cpu : 0;
  state.counters["kernels"] = static_cast<double>(in.kernels);
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(in.path)) / 1e6;
  state.counters["peak_rss_MB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_NsysLoad)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

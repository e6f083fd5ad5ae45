// Speed of reading a Kineto trace and computing its overlap, on one core: MB/s of uncompressed
// JSON (target >= 100 MB/s). The input is a synthetic PyTorch-2.x-shaped trace written once per
// run into $TMPDIR (size: NCCLWATCH_KINETO_BENCH_MB, default 500), plain and gzipped.
// Peak RSS is reported too: the reader streams, so it must stay far below the file size.
// bytes_per_second is per CPU second of the (single) loading thread: the machines this runs on
// are shared, and wall time there measures the neighbours as much as the reader.
#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <zlib.h>

#include "analysis/overlap.h"
#include "kineto/kineto_loader.h"
#include "synthetic_trace.h"

namespace {

using namespace ncclwatch;

struct Inputs {
  std::string json;
  std::string gz;
  uint64_t bytes = 0;
  double expected_pct = 0;
};

const Inputs& inputs() {
  static const Inputs in = [] {
    Inputs r;
    const char* mb_env = std::getenv("NCCLWATCH_KINETO_BENCH_MB");
    const uint64_t mb = mb_env != nullptr ? std::strtoull(mb_env, nullptr, 10) : 500;
    const auto dir = std::filesystem::temp_directory_path();
    r.json = (dir / "ncclwatch_kineto_bench.json").string();
    r.gz = r.json + ".gz";
    kineto::testing::SyntheticTraceSpec spec;
    spec.compute_kernels_per_step = 200;
    spec.allreduces_per_step = 8;
    std::FILE* f = std::fopen(r.json.c_str(), "wb");
    if (f == nullptr) std::abort();
    r.bytes = kineto::testing::write_synthetic_trace(f, spec, mb * 1000 * 1000);
    std::fclose(f);
    r.expected_pct = kineto::testing::synthetic_overlap_pct(spec);
    // gzip -1 of the same bytes: the compressed case measures inflate + parse.
    std::FILE* src = std::fopen(r.json.c_str(), "rb");
    gzFile out = gzopen(r.gz.c_str(), "wb1");
    std::vector<char> buf(1 << 20);
    for (std::size_t n; src != nullptr && (n = std::fread(buf.data(), 1, buf.size(), src)) > 0;)
      gzwrite(out, buf.data(), static_cast<unsigned>(n));
    gzclose(out);
    if (src != nullptr) std::fclose(src);
    return r;
  }();
  return in;
}

void load_and_analyse(benchmark::State& state, const std::string& path) {
  const Inputs& in = inputs();
  double pct = 0;
  std::size_t kernels = 0;
  for (auto _ : state) {
    std::vector<model::InputProblem> problems;
    auto rank = kineto::load_rank(path, problems);
    if (!rank || !problems.empty()) {
      state.SkipWithError("the synthetic trace did not load cleanly");
      return;
    }
    pct = 100.0 * analysis::overlap_fraction(*rank);
    kernels = rank->kernels.size();
    benchmark::DoNotOptimize(pct);
  }
  if (std::fabs(pct - in.expected_pct) > 1e-6)
    state.SkipWithError("overlap differs from the layout's");
  state.SetBytesProcessed(static_cast<int64_t>(in.bytes) * state.iterations());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["file_MB"] = static_cast<double>(in.bytes) / 1e6;
  state.counters["kernels"] = static_cast<double>(kernels);
  state.counters["overlap_pct"] = pct;
  state.counters["peak_rss_MB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void BM_KinetoJson(benchmark::State& state) {
  load_and_analyse(state, inputs().json);
}
void BM_KinetoGzip(benchmark::State& state) {
  load_and_analyse(state, inputs().gz);
}

BENCHMARK(BM_KinetoJson)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_KinetoGzip)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

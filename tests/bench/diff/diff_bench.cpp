// Speed of `ncclwatch diff` on two large runs (label bench): 512 ranks on 64 nodes x 1000 steps
// each (the many-rank job of the analysis benchmark), NEW with one slow GPU. Their report JSONs
// are written once; the timed loop is what `ncclwatch diff BASE.json NEW.json` does: read and
// validate both documents, compare, render the text. Also the comparison alone (documents in
// memory). The trace -> report half of a diff of trace inputs is `ncclwatch report`'s pipeline,
// measured by the collector and analysis benchmarks.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ddp_sim.h"
#include "diff/diff_render.h"
#include "diff/run_comparison.h"
#include "diff/run_input.h"
#include "pipeline/pipeline.h"
#include "report/json_renderer.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::analysis::testing::SimParams;

nlohmann::json report_of(const SimParams& p) {
  auto sim = ncclwatch::analysis::testing::simulate(p);
  ncclwatch::pipeline::PipelineOptions options;
  options.link_gpu = false;
  return ncclwatch::report::render_json(ncclwatch::pipeline::run_pipeline(sim.job, options).report);
}

struct Pair {
  fs::path dir, base, now;
  uint64_t bytes = 0;
  Pair() {
    dir = fs::temp_directory_path() / ("ncclwatch-diff-bench-" + std::to_string(getpid()));
    fs::create_directories(dir);
    auto p = ncclwatch::analysis::testing::sim_params(512, 8);
    p.steps = 1000;
    p.jitter_ns = 20'000;
    base = dir / "base.json";
    now = dir / "new.json";
    std::ofstream(base) << report_of(p).dump(2);
    p.ranks[77].compute_scale = 1.3;
    p.seed = 2;
    std::ofstream(now) << report_of(p).dump(2);
    bytes = fs::file_size(base) + fs::file_size(now);
  }
  ~Pair() { fs::remove_all(dir); }
};

const Pair& pair() {
  static Pair p;
  return p;
}

void BM_DiffReportFiles(benchmark::State& state) {
  const Pair& p = pair();
  std::string verdict;
  for (auto _ : state) {
    auto b = ncclwatch::diff::load_run(p.base.string(), "BASE", stderr, {});
    auto n = ncclwatch::diff::load_run(p.now.string(), "NEW", stderr, {});
    const auto r = ncclwatch::diff::compare_reports(b->report, n->report);
    benchmark::DoNotOptimize(ncclwatch::diff::render_text(r, {}));
    verdict = r.verdict;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * p.bytes));
  state.counters["json_MB"] = static_cast<double>(p.bytes) / 1e6;
  state.SetLabel(verdict.substr(0, 80));
}
BENCHMARK(BM_DiffReportFiles)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CompareInMemory(benchmark::State& state) {
  const Pair& p = pair();
  std::ifstream fb(p.base), fn(p.now);
  const nlohmann::json b = nlohmann::json::parse(fb), n = nlohmann::json::parse(fn);
  for (auto _ : state) {
    benchmark::DoNotOptimize(ncclwatch::diff::compare_reports(b, n).verdict);
  }
}
BENCHMARK(BM_CompareInMemory)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

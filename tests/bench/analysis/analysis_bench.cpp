// Speed of the analyses (label bench): analyze() on a large simulated DDP job must keep the
// collector's target of >= 10 M records/s. "records" = calls + kernels (GPU activities) of all
// ranks, what the trace readers hand over. Rates are per wall-clock second (UseRealTime): with
// threads:1 that is also per CPU-second; threads:2 is what `ncclwatch report` gets on 2 cores.
// Measure on an otherwise idle machine: with other work running, a worker thread waits for a
// core and the wall-clock figure says more about the machine than about the analyses.
#include <benchmark/benchmark.h>

#include "analysis/analyze.h"
#include "analysis/interval_set.h"
#include "ddp_sim.h"

namespace {

using ncclwatch::analysis::testing::SimJob;

const SimJob& big_job(bool host_only) {
  static SimJob gpu, host;
  SimJob& j = host_only ? host : gpu;
  if (j.job.ranks.empty()) {
    auto p = ncclwatch::analysis::testing::sim_params(8, 4);
    p.steps = 8000;
    p.jitter_ns = 20'000;
    p.host_only = host_only;
    p.ranks[5].host_stall_ns = 2'000'000;  // something to find
    j = ncclwatch::analysis::testing::simulate(p);
  }
  return j;
}

uint64_t records(const SimJob& j) {
  uint64_t n = 0;
  for (const auto& r : j.job.ranks) n += r.calls.size() + r.kernels.size();
  return n;
}

// analyze() on `j` with `threads` workers, the report destroyed inside the timed loop too.
void run_analyze(benchmark::State& state, const SimJob& j, unsigned threads) {
  for (auto _ : state) {
    ncclwatch::model::Report report;
    ncclwatch::analysis::analyze(j.job, j.match, j.clocks, report, threads);
    benchmark::DoNotOptimize(report.json);
  }
  const uint64_t n = records(j);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["records"] = static_cast<double>(n);
  state.counters["records_per_s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Analyze(benchmark::State& state) {
  run_analyze(state, big_job(state.range(0) != 0), static_cast<unsigned>(state.range(1)));
}
BENCHMARK(BM_Analyze)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->ArgNames({"host_only", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Many ranks, a realistic profile length: 512 ranks on 64 nodes, 1000 steps, GPU-timed. The
// report's size grows with ranks, not records: the short many-rank jobs of the verdict matrix
// (20-50 steps) pay that per-rank cost on few records; this job shows it amortized.
const SimJob& many_ranks_job() {
  static SimJob j;
  if (j.job.ranks.empty()) {
    auto p = ncclwatch::analysis::testing::sim_params(512, 8);
    p.steps = 1000;
    p.jitter_ns = 20'000;
    p.ranks[77].host_stall_ns = 2'000'000;
    j = ncclwatch::analysis::testing::simulate(p);
  }
  return j;
}

void BM_AnalyzeManyRanks(benchmark::State& state) {
  run_analyze(state, many_ranks_job(), static_cast<unsigned>(state.range(0)));
}
BENCHMARK(BM_AnalyzeManyRanks)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_IntervalSetUnionOfSortedKernels(benchmark::State& state) {
  std::vector<ncclwatch::analysis::Interval> spans;
  int64_t t = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    spans.push_back({t, t + 700});
    t += 500 + (i % 7) * 100;
  }
  for (auto _ : state) {
    auto s = ncclwatch::analysis::IntervalSet::from_sorted(spans);
    benchmark::DoNotOptimize(s.length());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * spans.size()));
}
BENCHMARK(BM_IntervalSetUnionOfSortedKernels)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

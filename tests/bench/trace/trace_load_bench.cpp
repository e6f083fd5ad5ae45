// Records per second loading synthetic traces: one rank of 1 M records (load_rank, and the raw
// chunked reader for comparison), and a 16-rank job of 256 K records each through load_job with
// 1 and 2 threads (the collector's target is >= 10 M records/s on 2 cores overall). The mix is
// that of a full-mode (CUPTI) trace: per collective one call, one launch, one link, one kernel,
// plus compute kernels.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "trace/job_loader.h"
#include "trace/rank_loader.h"
#include "trace/trace_file_reader.h"
#include "trace_fixture.h"

namespace {

using namespace ncclwatch::trace;
using namespace ncclwatch::trace::testing;

std::vector<Record> synthetic_rank(std::size_t records, int32_t rank) {
  std::vector<Record> rs;
  rs.reserve(records + 16);
  rs.push_back(make_identity(rank, 64, rank % 8, rank % 8));
  rs.push_back(make_comm(0x1234, 64, rank, 10));
  for (auto& s : make_string(1, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL")) rs.push_back(s);
  for (auto& s : make_string(2, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"))
    rs.push_back(s);
  uint32_t seq = 0;
  int64_t t = 1'000'000;
  while (rs.size() < records) {
    rs.push_back(make_call(Func::kAllReduce, 0x1234, seq, t, t + 4000, 1 << 20));
    rs.push_back(make_launch(t + 1000, t + 3000, 0xabc0, seq));
    rs.push_back(make_link(t + 1500, 0x1234, seq, seq));
    rs.push_back(make_kernel(t + 5000, t + 90000, seq, 1, true));
    rs.push_back(make_kernel(t + 6000, t + 50000, seq + (1u << 30), 2, false, 8));
    if (seq % 64 == 0) rs.push_back(make_clock(t, t + 1'700'000'000'000'000'000, 50));
    ++seq;
    t += 100'000;
  }
  rs.resize(records);
  return rs;
}

struct Files {
  TempDir dir;
  std::string one_rank;
  std::string job_dir;
};

Files& files() {
  static std::unique_ptr<Files> f = [] {
    auto f = std::make_unique<Files>();
    f->one_rank = write_rank(f->dir.path(), "bench", "single", 1, 0, 1, synthetic_rank(1 << 20, 0));
    f->job_dir = f->dir.file("job");
    std::filesystem::create_directory(f->job_dir);
    for (int r = 0; r < 16; ++r)
      write_rank(f->job_dir, "bench", "node", 100 + r, r, 16, synthetic_rank(1 << 18, r));
    return f;
  }();
  return *f;
}

void BM_ReaderScan(benchmark::State& state) {
  const std::string& path = files().one_rank;
  uint64_t records = 0;
  for (auto _ : state) {
    TraceFileReader reader;
    reader.open(path);
    uint64_t kinds = 0;
    for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next()) {
      for (const auto& r : chunk) kinds += static_cast<uint8_t>(r.prefix.kind);
    }
    benchmark::DoNotOptimize(kinds);
    records += reader.record_count();
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_ReaderScan)->Unit(benchmark::kMillisecond);

void BM_LoadRank(benchmark::State& state) {
  const std::string& path = files().one_rank;
  uint64_t records = 0;
  for (auto _ : state) {
    std::vector<ncclwatch::model::InputProblem> problems;
    auto trace = load_rank(path, problems);
    records += trace.info.records;
    benchmark::DoNotOptimize(trace.calls.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_LoadRank)->Unit(benchmark::kMillisecond);

void BM_LoadJob(benchmark::State& state) {
  JobLoadOptions options;
  options.threads = static_cast<unsigned>(state.range(0));
  uint64_t records = 0;
  for (auto _ : state) {
    auto job = load_job(files().job_dir, options);
    for (const auto& r : job.ranks) records += r.info.records;
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_LoadJob)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

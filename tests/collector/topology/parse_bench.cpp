// Parse speed of NCCL_DEBUG logs: a 16-node x 8-GPU job with 16 channels (2.19 forms), all
// rank logs through the parser, grouping and every check. Reports bytes/s.
#include <benchmark/benchmark.h>

#include <string>

#include "log_builder.h"
#include "topology/checks.h"
#include "topology/log_parser.h"

namespace {

void BM_ParseAndCheck(benchmark::State& state) {
  ncclwatch::topology::testing::JobSpec spec;
  spec.nodes = static_cast<int>(state.range(0));
  spec.gpus = 8;
  spec.nics = 8;
  spec.channels = 16;
  auto files = ncclwatch::topology::testing::LogBuilder(spec).build();
  std::size_t bytes = 0;
  for (const auto& [n, t] : files) bytes += t.size();
  for (auto _ : state) {
    ncclwatch::topology::LogParser parser;
    for (const auto& [n, t] : files) parser.add_text(n, t);
    auto set = parser.take();
    auto groups = ncclwatch::topology::group_comms(set);
    auto comms = ncclwatch::topology::build_contexts(set, groups, {}, {});
    std::vector<ncclwatch::topology::TopoFinding> out;
    ncclwatch::topology::check_node_count(set, comms, out);
    ncclwatch::topology::check_transports(set, comms, out);
    ncclwatch::topology::check_rings(set, comms, out);
    ncclwatch::topology::check_agreement(set, comms, out);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["log_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ParseAndCheck)->Arg(2)->Arg(16)->Unit(benchmark::kMillisecond);

// A job hung in init: N threads of one process each start a comm init that never completes
// (every line a comm line with a new comm pointer). Was quadratic in N (40,000 lines: ~50 s).
void BM_HungInit(benchmark::State& state) {
  std::string text;
  for (int64_t i = 0; i < state.range(0); ++i) {
    text += "node0:100:" + std::to_string(200 + i) + " [0] NCCL INFO ncclCommInitRank comm 0x" +
            std::to_string(90000 + i) +
            " rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x" + std::to_string(i) +
            " - Init START\n";
  }
  for (auto _ : state) {
    ncclwatch::topology::LogParser parser;
    parser.add_text("hung.log", text);
    auto set = parser.take();
    auto groups = ncclwatch::topology::group_comms(set);
    benchmark::DoNotOptimize(groups);
  }
  state.SetItemsProcessed(state.range(0) * state.iterations());
}
BENCHMARK(BM_HungInit)->Arg(10000)->Arg(40000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

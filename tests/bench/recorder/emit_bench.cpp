// Records per second through ncclwatch::shim::emit() into a live recorder (segment + drain
// thread + trace file), from 1 and 2 threads. "accepted" is the share not dropped because the
// drain (a disk writer) fell behind: the producers never wait for it.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "record/recorder.h"
#include "record/recorder_control.h"
#include "record/settings.h"

namespace {

void BM_Emit(benchmark::State& state) {
  static bool started = [] {
    std::string dir = "/tmp/ncclwatch-bench-" + std::to_string(getpid());
    setenv("NCCLWATCH_DIR", dir.c_str(), 0);
    setenv("NCCLWATCH_RING_MB", "400", 0);  // 4M slots: room for one run
    ncclwatch::shim::load_settings(&ncclwatch::shim::process_env);
    return ncclwatch::shim::ensure_recorder();
  }();
  if (!started) {
    state.SkipWithError("recorder could not start");
    return;
  }
  ncclwatch::format::Record rec{};
  rec.call.prefix.kind = ncclwatch::format::RecordKind::kCall;
  rec.call.prefix.tid = ncclwatch::shim::thread_id();
  // Start every run with an empty ring: the drain (a disk writer on a shared machine) is not
  // what is measured here.
  if (state.thread_index() == 0) {
    while (ncclwatch::shim::pending_records() > 0) usleep(1000);
  }
  uint64_t accepted = 0;
  for (auto _ : state) {
    rec.call.t_enter_ns = ncclwatch::shim::now_ns();
    accepted += ncclwatch::shim::emit(rec) ? 1 : 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["accepted"] =
      benchmark::Counter(static_cast<double>(accepted) / static_cast<double>(state.iterations()),
                         benchmark::Counter::kAvgThreads);
}

BENCHMARK(BM_Emit)
    ->Threads(1)
    ->Threads(2)
    ->Iterations(1000000)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

// Entry evidence as the hooks leave it (format.h, InFlightSlot): mark_entered before the real
// call, mark_returned after. The alternative, an entry record in the ring, costs one BM_Emit per
// call; this is what the slot costs instead.
void BM_EntrySlot(benchmark::State& state) {
  if (!ncclwatch::shim::ensure_recorder()) {
    state.SkipWithError("recorder could not start");
    return;
  }
  ncclwatch::format::CallEntry entry{};
  entry.func = static_cast<uint8_t>(ncclwatch::format::Func::kAllReduce);
  entry.comm_id = 0x1234;
  entry.count = 1024;
  entry.peer = -1;
  for (auto _ : state) {
    entry.t_enter_ns = ncclwatch::shim::now_ns();
    ++entry.seq;
    ncclwatch::shim::mark_entered(entry);
    ncclwatch::shim::mark_returned();
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_EntrySlot)->Threads(1)->Repetitions(5)->ReportAggregatesOnly(true);

// The clock read both variants include, for subtraction.
void BM_Clock(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ncclwatch::shim::now_ns());
}
BENCHMARK(BM_Clock)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::string path = ncclwatch::shim::current_trace_path();
  ncclwatch::shim::finish_recorder();
  if (!path.empty()) {
    unlink(path.c_str());
    rmdir(path.substr(0, path.rfind('/')).c_str());
  }
  return 0;
}

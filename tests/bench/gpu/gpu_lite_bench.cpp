// Lite mode's cost per collective on the application thread: claim a slot and record a CUDA
// event before and after the call (LiteTimer::before_call / after_call), over the fake cudart.
// On a real GPU each cudaEventRecord costs ~1-2 us of driver time on top of this; the figure
// here is the shim's own share. The poll thread drains slots in the background meanwhile.
#include <benchmark/benchmark.h>

#include <cuda_runtime_api.h>

#include <string>

#include "cudart_api.h"
#include "lite_timer.h"

namespace ncclwatch::shim::gpu {
namespace {

void BM_LiteCollective(benchmark::State& state) {
  static LiteTimer* timer = nullptr;
  static cudaStream_t stream = nullptr;
  if (timer == nullptr) {
    CudartApi rt;
    std::string why;
    if (!rt.load(why)) {
      state.SkipWithError(why.c_str());
      return;
    }
    timer = new LiteTimer();
    if (!timer->start(rt, why)) {
      state.SkipWithError(why.c_str());
      return;
    }
    cudaStreamCreate(&stream);
    timer
        ->stop();  // no background poller: this benchmark drains the slots itself (one poller only)
  }
  InFlightCall call;
  call.active = true;
  call.func = format::Func::kAllReduce;
  call.comm_id = 0xC0;
  call.stream = reinterpret_cast<uint64_t>(stream);
  uint64_t skipped_before = timer->skipped();
  for (auto _ : state) {
    ++call.seq;
    timer->before_call(call);
    timer->after_call(call, 0);
    // Real collectives are >= ~10 us apart, so the poll thread keeps the 1024 slots free; at
    // benchmark speed it cannot, so drain here, off the clock.
    if ((call.seq & 255) == 0) {
      state.PauseTiming();
      timer->poll();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["untimed_calls"] = static_cast<double>(timer->skipped() - skipped_before);
}
BENCHMARK(BM_LiteCollective);

// Without a timer: the floor (the bare call of an empty observer pair) for comparison.
void BM_NoTimer(benchmark::State& state) {
  InFlightCall call;
  for (auto _ : state) {
    ++call.seq;
    benchmark::DoNotOptimize(call);
  }
}
BENCHMARK(BM_NoTimer);

}  // namespace
}  // namespace ncclwatch::shim::gpu

BENCHMARK_MAIN();

// GPU timing per window (shim/record/gpu_switch.h): what switching CUPTI costs at a window's
// edges, and what it saves per kernel launch in between, against the fake libcupti.
//  - BM_SwitchCuptiOffAndOn: one off + on cycle of CuptiTracer::switch_activity -- the kernel,
//    memcpy and memset kinds disabled, the launch callbacks off, cuptiActivityFlushAll, then all
//    enabled again. It runs on CUPTI's background thread, twice per window, never on the
//    application's. The fake's calls are bookkeeping under a lock: a real CUPTI's enable and
//    disable cost more, once per window edge, which a benchmark here cannot say.
//  - BM_LaunchKernel/cupti_on|off: the application's cudaLaunchKernel with the tracer started,
//    kernel activity and launch callbacks on (the shim's callback and an activity record per
//    kernel) or off (nothing of CUPTI's on the launch path): on a real GPU this is the ~2 us per
//    kernel the switch takes off a launch-bound job outside windows.
#include <benchmark/benchmark.h>

#include <cuda_runtime_api.h>

#include <string>

#include "cupti_api.h"
#include "cupti_tracer.h"
#include "fake_cuda_hooks.h"
#include "memory_recorder.h"

namespace ncclwatch::shim::gpu {
namespace {

void dummy_kernel() {}  // a host function standing for a kernel: the fake only needs an address

CuptiTracer* tracer(benchmark::State& state) {
  static bool tried = false;
  static bool ok = false;
  if (!tried) {
    tried = true;
    CuptiApi api;
    std::string why;
    if (!api.load_from(FAKE_CUPTI, why)) {
      state.SkipWithError(why.c_str());
      return nullptr;
    }
    TracerOptions options;
    ok = CuptiTracer::instance().start(std::move(api), options, why) ==
         CuptiTracer::StartResult::kStarted;
    if (!ok) state.SkipWithError(why.c_str());
  }
  return ok ? &CuptiTracer::instance() : nullptr;
}

void BM_SwitchCuptiOffAndOn(benchmark::State& state) {
  CuptiTracer* t = tracer(state);
  if (t == nullptr) return;
  for (auto _ : state) {
    t->switch_activity(false);
    t->switch_activity(true);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SwitchCuptiOffAndOn);

void BM_LaunchKernel(benchmark::State& state) {
  CuptiTracer* t = tracer(state);
  if (t == nullptr) return;
  const bool on = state.range(0) != 0;
  t->switch_activity(on);
  for (auto _ : state) {
    ncclwatch_fake_cuda_next_kernel("tiny_kernel", 100);
    cudaLaunchKernel(reinterpret_cast<const void*>(&dummy_kernel), dim3(1), dim3(1), nullptr, 0,
                     nullptr);
  }
  // After the timed loop: what the tracer recorded is memory, not part of the figure.
  cudaDeviceSynchronize();
  t->flush();
  test_clear_records();
  t->switch_activity(true);
  state.SetLabel(on ? "cupti_on" : "cupti_off");
}
BENCHMARK(BM_LaunchKernel)->Arg(1)->Arg(0)->Iterations(50'000);

}  // namespace
}  // namespace ncclwatch::shim::gpu
BENCHMARK_MAIN();

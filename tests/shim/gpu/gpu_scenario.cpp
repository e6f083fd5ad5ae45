// One process driven through a GPU-timeline scenario, as a rank of a training job would be:
// NCCL calls made through the recording API (memory_recorder.h's test_call, as the NCCL
// wrappers make them), NCCL kernels through the fake-GPU seam (as the fake NCCL launches them),
// compute kernels through the fake cudart. Writes what was recorded for gpu_timeline_test:
//   <out>.records : uint32 mode, uint64 cupti_dropped, then 64-byte records
//   <out>.truth   : per NCCL kernel launched, "comm seq start end" (the virtual GPU's answer)
// Usage: gpu_scenario <scenario> <out>; scenarios: basic (default), steps:N
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu_timeline.h"
#include "memory_recorder.h"
#ifndef NCCLWATCH_SCENARIO_NO_CUDA
#include <cuda_runtime_api.h>

#include "../../fakes/nccl/fake_gpu_seam.h"
#include "fake_cuda_hooks.h"
extern "C" int nvtxRangePushA(const char*);
extern "C" int nvtxRangePop(void);
#endif

using ncclwatch::format::Func;
using ncclwatch::shim::InFlightCall;
namespace shim = ncclwatch::shim;

namespace {

constexpr int64_t kCollectiveNs = 1'000'000;  // transfer time of every fake collective
FILE* truth = nullptr;

InFlightCall call(Func f, uint64_t comm, uint32_t seq, void* stream, uint32_t group = 0,
                  uint32_t depth = 0) {
  InFlightCall c;
  c.func = f;
  c.comm_id = comm;
  c.seq = seq;
  c.stream = reinterpret_cast<uint64_t>(stream);
  c.group_id = group;
  c.group_depth = depth;
  return c;
}

#ifndef NCCLWATCH_SCENARIO_NO_CUDA
// What the fake NCCL does for one kernel of a 1-rank-equivalent collective: launch, then end =
// start + transfer time.
void nccl_kernel(void* stream, const char* name, uint64_t comm, uint32_t seq) {
  uint64_t token = 0;
  int64_t start = ncclwatch_fake_gpu_launch(stream, name, &token);
  ncclwatch_fake_gpu_complete(token, start + kCollectiveNs);
  std::fprintf(truth, "%llu %u %lld %lld\n", static_cast<unsigned long long>(comm), seq,
               static_cast<long long>(start), static_cast<long long>(start + kCollectiveNs));
}

void compute(cudaStream_t s, const char* name, int64_t ns) {
  ncclwatch_fake_cuda_next_kernel(name, ns);
  static char dummy;
  cudaLaunchKernel(&dummy, dim3(1), dim3(1), nullptr, 0, s);
}

void run(int steps) {
  cudaSetDevice(0);
  // Communicator init: the first NCCL call, where GPU timing starts.
  shim::test_call(call(Func::kCommInitRank, 0xC0, 0, nullptr), [] { return 0; });
  cudaStream_t compute_stream, nccl_stream, capture_stream;
  cudaStreamCreate(&compute_stream);
  cudaStreamCreate(&nccl_stream);
  cudaStreamCreate(&capture_stream);
  const uint64_t comm = 0xC0, comm2 = 0xC1, nb_comm = 0xC2;
  void* ns = nccl_stream;
  for (int step = 0; step < steps; ++step) {
    nvtxRangePushA("step");
    // Backward: three 2 ms kernels; the all-reduce of the first bucket overlaps the last two.
    compute(compute_stream, "backward_kernel", 2'000'000);
    shim::test_call(call(Func::kAllReduce, comm, static_cast<uint32_t>(step), ns), [&] {
      nccl_kernel(ns, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", comm, static_cast<uint32_t>(step));
      return 0;
    });
    compute(compute_stream, "backward_kernel", 2'000'000);
    compute(compute_stream, "backward_kernel", 2'000'000);
    // A group over two comms: the kernels are launched at GroupEnd.
    uint32_t gid = 100 + static_cast<uint32_t>(step);
    shim::test_call(call(Func::kGroupStart, 0, 0, nullptr, gid, 1), [] { return 0; });
    shim::test_call(call(Func::kAllReduce, comm, 1000 + static_cast<uint32_t>(step), ns, gid, 1),
                    [] { return 0; });
    shim::test_call(call(Func::kAllGather, comm2, static_cast<uint32_t>(step), ns, gid, 1),
                    [] { return 0; });
    shim::test_call(call(Func::kGroupEnd, 0, 0, ns, gid, 1), [&] {
      nccl_kernel(ns, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, gid);
      nccl_kernel(ns, "ncclDevKernel_AllGather_RING_LL", 0, gid);
      return 0;
    });
    // A non-blocking comm: the call returns ncclInProgress, NCCL's own thread launches.
    std::thread nccl_thread;
    shim::test_call(call(Func::kAllReduce, nb_comm, static_cast<uint32_t>(step), ns), [&] {
      nccl_thread = std::thread([&] {
        nccl_kernel(ns, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", nb_comm,
                    static_cast<uint32_t>(step));
      });
      return 7;  // ncclInProgress
    });
    nccl_thread.join();
    // A one-rank comm launches nothing.
    shim::test_call(call(Func::kBroadcast, 0xC3, static_cast<uint32_t>(step), ns),
                    [] { return 0; });
    void* buf = nullptr;
    cudaMalloc(&buf, 1 << 20);
    cudaMemcpyAsync(buf, buf, 1 << 20, cudaMemcpyDeviceToDevice, compute_stream);
    cudaFree(buf);
    cudaStreamSynchronize(compute_stream);
    cudaStreamSynchronize(nccl_stream);
    nvtxRangePop();
    if (step == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(150));  // let CUPTI deliver
  }
  // A collective captured into a graph: no kernel now.
  cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeGlobal);
  shim::test_call(call(Func::kAllReduce, comm, 5000, capture_stream), [] { return 0; });
  cudaGraph_t graph;
  cudaStreamEndCapture(capture_stream, &graph);
  cudaGraphDestroy(graph);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gpu_scenario <scenario> <out>\n");
    return 2;
  }
  std::string scenario = argv[1], out = argv[2];
  truth = std::fopen((out + ".truth").c_str(), "w");
  int steps = 3;
  if (scenario.rfind("steps:", 0) == 0) steps = std::atoi(scenario.c_str() + 6);
#ifdef NCCLWATCH_SCENARIO_NO_CUDA
  (void)steps;
  for (uint32_t i = 0; i < 3; ++i) {
    shim::test_call(call(Func::kAllReduce, 0xC0, i, reinterpret_cast<void*>(0x1234)),
                    [] { return 0; });
  }
#else
  run(steps);
#endif
  ncclwatch::shim::gpu::GpuTimeline::instance().shutdown();
  std::fclose(truth);
  auto records = shim::test_records();
  FILE* f = std::fopen((out + ".records").c_str(), "wb");
  uint32_t mode = shim::test_timing_mode.load();
  uint64_t dropped = shim::test_cupti_dropped.load();
  std::fwrite(&mode, sizeof mode, 1, f);
  std::fwrite(&dropped, sizeof dropped, 1, f);
  if (!records.empty())
    std::fwrite(records.data(), sizeof(ncclwatch::format::Record), records.size(), f);
  std::fclose(f);
  return 0;
}

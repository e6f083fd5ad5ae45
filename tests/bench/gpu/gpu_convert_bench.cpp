// CUPTI activity buffer -> format records: the work of the CUPTI buffer-completed thread.
// Target: >= 20 M records/s. The buffer is walked with cuptiActivityGetNextRecord of the fake
// libcupti (a pointer walk, as in the real one); records go to a sink that copies them out (the
// ring's own cost is measured by the recorder's emit benchmark).
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "activity_converter.h"

namespace ncclwatch::shim::gpu {
namespace {

format::Record g_last;
uint64_t g_count = 0;
bool copy_sink(const format::Record& r) noexcept {
  g_last = r;
  ++g_count;
  return true;
}

struct Buffer {
  std::vector<uint64_t> storage;  // 8-byte aligned
  size_t valid = 0;
  std::vector<std::string> names;
};

// `n` kernel records, 2 % of them NCCL kernels, names from a pool of 200 (a real step has a few
// hundred distinct kernels).
Buffer make_buffer(size_t n) {
  Buffer b;
  for (int i = 0; i < 200; ++i) {
    b.names.push_back(i % 50 == 0
                          ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL_" + std::to_string(i)
                          : "void at::native::elementwise_kernel<128, 4>_" + std::to_string(i));
  }
  const size_t rec = (sizeof(CUpti_ActivityKernel10) + 7) & ~size_t{7};
  b.storage.resize(n * rec / 8);
  auto* base = reinterpret_cast<uint8_t*>(b.storage.data());
  for (size_t i = 0; i < n; ++i) {
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1'000'000'000 + i * 1000;
    k.end = k.start + 800;
    k.streamId = 7 + (i % 3);
    k.correlationId = static_cast<uint32_t>(i + 1);
    k.name = b.names[i % b.names.size()].c_str();
    std::memcpy(base + i * rec, &k, sizeof k);
  }
  b.valid = n * rec;
  return b;
}

void BM_ConvertKernelBuffer(benchmark::State& state) {
  Buffer b = make_buffer(static_cast<size_t>(state.range(0)));
  ClockConverter clock;
  ActivityConverter conv(&copy_sink, clock, KernelFilter{});
  for (auto _ : state) {
    conv.convert_buffer(&cuptiActivityGetNextRecord, reinterpret_cast<uint8_t*>(b.storage.data()),
                        b.valid);
    benchmark::DoNotOptimize(g_last);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ConvertKernelBuffer)->Arg(1 << 14)->Arg(1 << 16);

// The bounded trace (NCCLWATCH_KERNELS=nccl): compute kernels filtered out.
void BM_ConvertKernelBufferNcclOnly(benchmark::State& state) {
  Buffer b = make_buffer(static_cast<size_t>(state.range(0)));
  ClockConverter clock;
  ActivityConverter conv(&copy_sink, clock, KernelFilter(KernelFilter::Policy::kNccl));
  for (auto _ : state) {
    conv.convert_buffer(&cuptiActivityGetNextRecord, reinterpret_cast<uint8_t*>(b.storage.data()),
                        b.valid);
    benchmark::DoNotOptimize(g_last);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ConvertKernelBufferNcclOnly)->Arg(1 << 16);

}  // namespace
}  // namespace ncclwatch::shim::gpu

BENCHMARK_MAIN();

// Added cost of an intercepted NCCL call: ncclAllReduce through libncclwatch.so (LD_PRELOAD, set
// by CTest) against pncclAllReduce, the same fake function called directly. One-rank comm, so
// the fake returns at once. Report the difference of the medians.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>

namespace {

ncclComm_t g_comm = nullptr;
float g_buf[8];

bool shim_loaded() {
  Dl_info info{};
  void* sym = dlsym(RTLD_DEFAULT, "ncclAllReduce");
  return sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname != nullptr &&
         std::strstr(info.dli_fname, "libncclwatch") != nullptr;
}

void setup() {
  if (g_comm != nullptr) return;
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclCommInitRank(&g_comm, 1, id, 0);
}

void BM_DirectFake(benchmark::State& state) {
  setup();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        pncclAllReduce(g_buf, g_buf, 8, ncclFloat32, ncclSum, g_comm, nullptr));
  }
}

void BM_Intercepted(benchmark::State& state) {
  if (!shim_loaded()) {
    state.SkipWithError("libncclwatch.so is not preloaded");
    return;
  }
  setup();
  for (auto _ : state) {
    benchmark::DoNotOptimize(ncclAllReduce(g_buf, g_buf, 8, ncclFloat32, ncclSum, g_comm, nullptr));
  }
}

BENCHMARK(BM_DirectFake)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_Intercepted)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();

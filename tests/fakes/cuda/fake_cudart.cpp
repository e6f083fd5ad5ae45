// Fake libcudart.so.13: the runtime functions ncclwatch and the fakes use, with the real
// signatures from cuda_runtime_api.h, on top of the virtual GPU (virtual_gpu.h). Also the
// fake-GPU seam the fake NCCL calls (tests/fakes/nccl/fake_gpu_seam.h) and a minimal NVTX
// (nvtxRangePushA / nvtxRangePop, as libnvToolsExt exports them) so fake_train can mark steps.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>  // brings generated_cuda_meta.h (launch parameter structs) with its prerequisites
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "../nccl/fake_gpu_seam.h"
#include "fake_cuda_hooks.h"
#include "virtual_gpu.h"

using ncclwatch::fake::FakeEvent;
using ncclwatch::fake::FakeStream;
using ncclwatch::fake::VirtualGpu;

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

thread_local cudaError_t tls_last_error = cudaSuccess;
thread_local const char* tls_next_name = nullptr;
thread_local int64_t tls_next_duration = 0;

cudaError_t fail(cudaError_t e) {
  tls_last_error = e;
  return e;
}

VirtualGpu& gpu() {
  return VirtualGpu::instance();
}

int device_count() {
  const char* v = std::getenv("NCCLWATCH_FAKE_CUDA_DEVICES");
  int n = v ? std::atoi(v) : 8;
  return n < 0 ? 0 : n;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && v[0] ? std::atoi(v) : fallback;
}

// The next compute kernel's name and duration (knob), then back to the default.
void take_next_kernel(const char*& name, int64_t& duration) {
  name = tls_next_name ? tls_next_name : "fake_kernel";
  duration = tls_next_duration > 0 ? tls_next_duration : 10'000;
  tls_next_name = nullptr;
  tls_next_duration = 0;
}

struct FakeGraph {
  int kernels = 0;
  int64_t duration_ns = 0;
  uint32_t id = 0;
};

// `runtime_cbid`: the runtime function the application called (its CUPTI record is the host side
// real CUPTI gives of the launch).
void launch_compute(cudaStream_t stream, uint32_t runtime_cbid) {
  FakeStream* s = gpu().resolve(stream);
  const char* name = nullptr;
  int64_t duration = 0;
  take_next_kernel(name, duration);
  cuLaunchKernel_params params{};
  params.hStream = reinterpret_cast<CUstream>(stream);
  gpu().run(s, kFakeKernel, name, duration, 0, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &params,
            runtime_cbid);
}

}  // namespace

FAKE_API void ncclwatch_fake_cuda_set_cupti_hooks(const NcclwatchFakeCuptiHooks* hooks) {
  gpu().set_hooks(hooks);
}

FAKE_API void ncclwatch_fake_cuda_host_sleep(int64_t ns) {
  gpu().host_sleep(ns);
}

FAKE_API void ncclwatch_fake_cuda_virtual_host() {
  gpu().use_virtual_host();
}

FAKE_API void ncclwatch_fake_cuda_next_kernel(const char* name, int64_t duration_ns) {
  tls_next_name = name ? gpu().intern(name) : nullptr;
  tls_next_duration = duration_ns;
}

// ---- the seam (tests/fakes/nccl/fake_gpu_seam.h) ----
FAKE_API int64_t ncclwatch_fake_gpu_launch(void* stream, const char* kernel_name, uint64_t* token) {
  return gpu().nccl_launch(gpu().resolve(stream),
                           kernel_name ? kernel_name : "ncclDevKernel_Generic", token);
}
FAKE_API void ncclwatch_fake_gpu_complete(uint64_t token, int64_t end_ns) {
  gpu().nccl_complete(token, end_ns);
}

// ---- errors, versions, devices ----
FAKE_API cudaError_t cudaGetLastError(void) {
  cudaError_t e = tls_last_error;
  tls_last_error = cudaSuccess;
  return e;
}
FAKE_API cudaError_t cudaPeekAtLastError(void) {
  return tls_last_error;
}
FAKE_API const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "fake CUDA error";
}
FAKE_API const char* cudaGetErrorName(cudaError_t e) {
  return e == cudaSuccess ? "cudaSuccess" : "cudaErrorFake";
}
FAKE_API cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = env_int("NCCLWATCH_FAKE_CUDA_RUNTIME_VERSION", 13010);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaDriverGetVersion(int* v) {
  *v = env_int("NCCLWATCH_FAKE_CUDA_RUNTIME_VERSION", 13010);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaGetDeviceCount(int* count) {
  *count = device_count();
  return *count > 0 ? cudaSuccess : fail(cudaErrorNoDevice);
}
FAKE_API cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  ncclwatch::fake::set_current_device(device);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaGetDevice(int* device) {
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  *device = ncclwatch::fake::current_device();
  return cudaSuccess;
}
FAKE_API cudaError_t cudaDeviceGetPCIBusId(char* bus, int len, int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  std::snprintf(bus, static_cast<size_t>(len), "0000:%02x:00.0", 0x18 + device);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaDeviceSynchronize(void) {
  const int64_t t = gpu().device_free_time(ncclwatch::fake::current_device());
  ncclwatch::fake::sleep_until_ns(t);
  gpu().synced(t);
  return cudaSuccess;
}

// ---- memory: host memory stands in for device memory ----
FAKE_API cudaError_t cudaMalloc(void** p, size_t size) {
  *p = std::calloc(1, size ? size : 1);
  return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
FAKE_API cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind,
                                     cudaStream_t stream) {
  if (dst && src && n) std::memmove(dst, src, n);
  // 20 GB/s: 1 byte = 0.05 ns.
  gpu().run(gpu().resolve(stream), kFakeMemcpy, "memcpy", static_cast<int64_t>(n / 20) + 1000, n, 0,
            nullptr, 0);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t stream) {
  if (p && n) std::memset(p, value, n);
  gpu().run(gpu().resolve(stream), kFakeMemset, "memset", static_cast<int64_t>(n / 50) + 1000, n, 0,
            nullptr, 0);
  return cudaSuccess;
}

// ---- streams ----
FAKE_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  *s = reinterpret_cast<cudaStream_t>(gpu().create_stream(ncclwatch::fake::current_device()));
  return cudaSuccess;
}
FAKE_API cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return cudaStreamCreateWithFlags(s, 0);
}
FAKE_API cudaError_t cudaStreamDestroy(cudaStream_t s) {
  gpu().destroy_stream(gpu().resolve(s));
  return cudaSuccess;
}
// Sleeps until the virtual stream is free, as a real sync waits for the GPU.
FAKE_API cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  const int64_t t = gpu().stream_free_time(gpu().resolve(s));
  ncclwatch::fake::sleep_until_ns(t);
  gpu().synced(t);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaStreamQuery(cudaStream_t s) {
  return gpu().stream_free_time(gpu().resolve(s)) <= ncclwatch::fake::mono_ns() ? cudaSuccess
                                                                                : cudaErrorNotReady;
}
FAKE_API cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  *status =
      gpu().resolve(s)->capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
FAKE_API cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  FakeStream* fs = gpu().resolve(s);
  if (fs->capturing) return fail(cudaErrorIllegalState);
  fs->capturing = true;
  return cudaSuccess;
}
FAKE_API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  FakeStream* fs = gpu().resolve(s);
  if (!fs->capturing) return fail(cudaErrorIllegalState);
  fs->capturing = false;
  static uint32_t next_graph = 1;
  *graph = reinterpret_cast<cudaGraph_t>(new FakeGraph{1, 20'000, next_graph++});
  return cudaSuccess;
}
FAKE_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long) {
  *exec = reinterpret_cast<cudaGraphExec_t>(graph);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  auto* g = reinterpret_cast<FakeGraph*>(exec);
  if (g == nullptr) return fail(cudaErrorInvalidValue);
  cuGraphLaunch_params params{reinterpret_cast<CUgraphExec>(exec),
                              reinterpret_cast<CUstream>(stream)};
  gpu().run(gpu().resolve(stream), kFakeKernel, "fake_graph_kernel", g->duration_ns, 0,
            CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &params,
            CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, g->id);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) {
  return cudaSuccess;
}
FAKE_API cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete reinterpret_cast<FakeGraph*>(g);
  return cudaSuccess;
}

// ---- kernels ----
FAKE_API cudaError_t cudaLaunchKernel(const void* func, dim3, dim3, void**, size_t,
                                      cudaStream_t stream) {
  if (func == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  FakeStream* s = gpu().resolve(stream);
  if (s->capturing) return cudaSuccess;  // becomes a graph node; runs at cudaGraphLaunch
  launch_compute(stream, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  return cudaSuccess;
}
FAKE_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                         void**) {
  if (config == nullptr || func == nullptr) return fail(cudaErrorInvalidValue);
  if (gpu().resolve(config->stream)->capturing) return cudaSuccess;
  launch_compute(config->stream, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060);
  return cudaSuccess;
}

// ---- events ----
FAKE_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  auto* ev = new (std::nothrow) FakeEvent();
  if (ev != nullptr) ev->timing = (flags & cudaEventDisableTiming) == 0;
  *e = reinterpret_cast<cudaEvent_t>(ev);
  return *e ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
FAKE_API cudaError_t cudaEventCreate(cudaEvent_t* e) {
  return cudaEventCreateWithFlags(e, 0);
}
FAKE_API cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<FakeEvent*>(e);
  return cudaSuccess;
}
// Knob NCCLWATCH_FAKE_TIMING_RECORDS=N: the first N records of timing events succeed and later
// ones fail (a driver out of resources), so lite mode loses GPU times for real. The application's
// own events (fake_train creates them with cudaEventDisableTiming) are not affected.
bool timing_record_fails(const FakeEvent& ev) {
  static const int limit = env_int("NCCLWATCH_FAKE_TIMING_RECORDS", -1);
  static std::atomic<int> records{0};
  return ev.timing && limit >= 0 && records.fetch_add(1) >= limit;
}

FAKE_API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream) {
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (timing_record_fails(*reinterpret_cast<FakeEvent*>(e)))
    return fail(cudaErrorLaunchOutOfResources);
  gpu().record_event(reinterpret_cast<FakeEvent*>(e), gpu().resolve(stream));
  return cudaSuccess;
}
FAKE_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t e, unsigned int) {
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  gpu().wait_event(gpu().resolve(stream), reinterpret_cast<FakeEvent*>(e));
  return cudaSuccess;
}
FAKE_API cudaError_t cudaEventQuery(cudaEvent_t e) {
  auto* ev = reinterpret_cast<FakeEvent*>(e);
  if (ev == nullptr) return fail(cudaErrorInvalidResourceHandle);
  return !ev->recorded || ev->time_ns <= ncclwatch::fake::mono_ns() ? cudaSuccess
                                                                    : cudaErrorNotReady;
}
FAKE_API cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  auto* ev = reinterpret_cast<FakeEvent*>(e);
  if (ev == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (ev->recorded) {
    ncclwatch::fake::sleep_until_ns(ev->time_ns);
    gpu().synced(ev->time_ns);
  }
  return cudaSuccess;
}
FAKE_API cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  auto* ea = reinterpret_cast<FakeEvent*>(a);
  auto* eb = reinterpret_cast<FakeEvent*>(b);
  if (ea == nullptr || eb == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (!ea->recorded || !eb->recorded) return fail(cudaErrorInvalidResourceHandle);
  int64_t now = ncclwatch::fake::mono_ns();
  if (ea->time_ns > now || eb->time_ns > now) return fail(cudaErrorNotReady);
  *ms = static_cast<float>(static_cast<double>(eb->time_ns - ea->time_ns) / 1e6);
  return cudaSuccess;
}

// ---- NVTX (libnvToolsExt's exported C API) ----
FAKE_API int nvtxRangePushA(const char* message) {
  gpu().range(1, message);
  return 0;
}
FAKE_API int nvtxRangePop(void) {
  gpu().range(0, nullptr);
  return 0;
}

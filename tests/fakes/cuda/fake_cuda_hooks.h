// Between the fake libcudart (which owns the virtual GPU) and the fake libcupti (which turns
// what the virtual GPU did into CUPTI callbacks and activity buffers). Fake-only C ABI: the fake
// CUPTI installs its hooks with ncclwatch_fake_cuda_set_cupti_hooks, exported by the fake
// cudart; with no hooks installed the virtual GPU still runs, unobserved (like CUDA without a
// profiler).
#pragma once

#include <cstdint>

extern "C" {

enum NcclwatchFakeActivityKind { kFakeKernel = 0, kFakeMemcpy = 1, kFakeMemset = 2 };

// One piece of GPU work, times on the host CLOCK_MONOTONIC (the virtual GPU clock).
struct NcclwatchFakeActivity {
  int kind;
  const char* name;  // interned by the fake cudart: valid for the life of the process
  int64_t start_ns;
  int64_t end_ns;
  uint32_t device;
  uint32_t stream_id;
  uint32_t correlation;
  uint32_t graph_id;
  uint64_t graph_node_id;
  uint64_t bytes;
};

// Host side of one launch call. Real CUPTI reports a launch made through the runtime by its
// runtime function alone (no DRIVER activity record for the driver call inside it, as seen on a
// real GPU): `runtime_cbid` names that function, 0 for a direct driver call (NCCL's launches).
struct NcclwatchFakeApiCall {
  uint32_t cbid;          // CUPTI_DRIVER_TRACE_CBID_* of the driver launch
  uint32_t runtime_cbid;  // CUPTI_RUNTIME_TRACE_CBID_* of the runtime function around it, or 0
  uint32_t correlation;
  uint32_t tid;
  int64_t start_ns;
  int64_t end_ns;
};

struct NcclwatchFakeCuptiHooks {
  // On the launching thread, at API entry of a driver launch (cbid), before the work is queued.
  void (*launch_enter)(uint32_t cbid, const char* function, const char* symbol, const void* params,
                       uint32_t correlation);
  void (*activity)(const NcclwatchFakeActivity* activity);
  void (*api_call)(const NcclwatchFakeApiCall* call);
  // NVTX push (push=1) / pop (push=0) on the calling thread.
  void (*range)(int push, const char* name, int64_t t_ns, uint32_t tid);
  // On the launching thread, at entry (exit=0) and exit (exit=1) of a runtime launch function
  // (cbid: CUPTI_RUNTIME_TRACE_CBID_*), around the driver launch it makes.
  void (*runtime_api)(int exit, uint32_t cbid, uint32_t correlation);
  // On the launching thread, at API exit of the driver launch `launch_enter` announced.
  void (*launch_exit)(uint32_t cbid, const void* params, uint32_t correlation);
};

void ncclwatch_fake_cuda_set_cupti_hooks(const NcclwatchFakeCuptiHooks* hooks);

// Knob for tests and fake_train: the next compute kernel this thread launches (cudaLaunchKernel,
// cudaLaunchKernelExC) gets this name and runs this long on the virtual GPU. Without it a
// kernel is "fake_kernel" and runs 10 us.
void ncclwatch_fake_cuda_next_kernel(const char* name, int64_t duration_ns);

// Host work of `ns` (sleeps that long). With NCCLWATCH_FAKE_VIRTUAL_HOST=1 the virtual GPU dates
// the host's next launches after it, whatever the real scheduling (see virtual_gpu.h).
void ncclwatch_fake_cuda_host_sleep(int64_t ns);

// Turns the virtual host on, as NCCLWATCH_FAKE_VIRTUAL_HOST=1 does (fake_train --virtual-host:
// `ncclwatch demo` runs its scenarios so, whatever the load of the machine it runs on). Call it
// before the first launch.
void ncclwatch_fake_cuda_virtual_host();

// The fake-GPU seam (tests/fakes/nccl/fake_gpu_seam.h), implemented by the fake cudart.
int64_t ncclwatch_fake_gpu_launch(void* stream, const char* kernel_name, uint64_t* token);
void ncclwatch_fake_gpu_complete(uint64_t token, int64_t end_ns);
}

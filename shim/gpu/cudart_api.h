// The CUDA runtime functions lite mode and capture detection use, resolved from the
// application's own libcudart (the one already loaded) so events live in its contexts.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace ncclwatch::shim::gpu {

struct CudartApi {
  void* handle = nullptr;
  std::string path;
  decltype(&::cudaGetDevice) GetDevice = nullptr;
  decltype(&::cudaRuntimeGetVersion) RuntimeGetVersion = nullptr;
  decltype(&::cudaEventCreateWithFlags) EventCreateWithFlags = nullptr;
  decltype(&::cudaEventDestroy) EventDestroy = nullptr;
  decltype(&::cudaEventRecord) EventRecord = nullptr;
  decltype(&::cudaEventQuery) EventQuery = nullptr;
  decltype(&::cudaEventSynchronize) EventSynchronize = nullptr;
  decltype(&::cudaEventElapsedTime) EventElapsedTime = nullptr;
  decltype(&::cudaStreamCreateWithFlags) StreamCreateWithFlags = nullptr;
  decltype(&::cudaStreamIsCapturing) StreamIsCapturing = nullptr;
  decltype(&::cudaGetLastError) GetLastError = nullptr;

  // The loaded libcudart (dl_iterate_phdr), else NCCLWATCH_CUDART, else the plain sonames.
  bool load(std::string& why);
};

}  // namespace ncclwatch::shim::gpu

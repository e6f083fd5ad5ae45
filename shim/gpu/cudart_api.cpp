#include "cudart_api.h"

#include <dlfcn.h>

#include <vector>

#include "library_finder.h"
#include "record/settings.h"

namespace ncclwatch::shim::gpu {
namespace {

template <typename F>
void resolve(void* handle, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (fn == nullptr && missing.empty()) missing = name;
}

}  // namespace

bool CudartApi::load(std::string& why) {
  std::vector<std::string> candidates;
  // The application's own runtime first: lite mode's events must live in its contexts.
  if (auto loaded = loaded_library("libcudart.so"); !loaded.empty()) {
    candidates.push_back(loaded);
  } else if (const std::string& chosen = settings().cudart; !chosen.empty()) {
    candidates.push_back(chosen);
  } else {
    // NCCL links cudart statically; an application may only have the driver loaded.
    candidates = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  }
  why = "no libcudart found";
  for (const auto& c : candidates) {
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h == nullptr) h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) continue;
    std::string missing;
    resolve(h, "cudaGetDevice", GetDevice, missing);
    resolve(h, "cudaRuntimeGetVersion", RuntimeGetVersion, missing);
    resolve(h, "cudaEventCreateWithFlags", EventCreateWithFlags, missing);
    resolve(h, "cudaEventDestroy", EventDestroy, missing);
    resolve(h, "cudaEventRecord", EventRecord, missing);
    resolve(h, "cudaEventQuery", EventQuery, missing);
    resolve(h, "cudaEventSynchronize", EventSynchronize, missing);
    resolve(h, "cudaEventElapsedTime", EventElapsedTime, missing);
    resolve(h, "cudaStreamCreateWithFlags", StreamCreateWithFlags, missing);
    resolve(h, "cudaStreamIsCapturing", StreamIsCapturing, missing);
    resolve(h, "cudaGetLastError", GetLastError, missing);
    if (missing.empty()) {
      handle = h;
      path = c;
      return true;
    }
    why = c + " lacks " + missing;
    dlclose(h);
  }
  return false;
}

}  // namespace ncclwatch::shim::gpu

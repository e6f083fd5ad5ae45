// Lazy resolution of the real NCCL functions.
//
// Order: dlsym(RTLD_NEXT, "pncclX") (NCCL exports a strong pnccl beside each weak nccl symbol;
// RTLD_NEXT never finds our own wrapper), then dlsym(RTLD_NEXT, "ncclX"), then -- for a libnccl
// dlopen'ed later with RTLD_LOCAL, which RTLD_NEXT cannot see -- every loaded object whose name
// contains "libnccl" (dl_iterate_phdr + dlopen(RTLD_NOLOAD)). A hit is cached; a miss is not (the
// library may be loaded later), but reported only once per function.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "nccl/hooks.h"

namespace ncclwatch::shim {
namespace {

constexpr std::size_t kFuncs = static_cast<std::size_t>(format::Func::kCount);
std::atomic<void*> g_real[kFuncs];
std::atomic<bool> g_reported[kFuncs];

bool is_own(void* p) {
  Dl_info mine{}, theirs{};
  if (dladdr(reinterpret_cast<void*>(&resolve_real), &mine) == 0) return false;
  if (dladdr(p, &theirs) == 0) return false;
  return mine.dli_fbase == theirs.dli_fbase;
}

struct ScanState {
  const char* symbols[2];
  void* found = nullptr;
};

int scan_object(dl_phdr_info* info, std::size_t, void* data) {
  auto* state = static_cast<ScanState*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || std::strstr(path, "libnccl") == nullptr) return 0;
  if (std::strstr(path, "libncclwatch") != nullptr) return 0;
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  for (const char* sym : state->symbols) {
    void* p = dlsym(handle, sym);
    if (p != nullptr && !is_own(p)) {
      state->found = p;
      break;
    }
  }
  // The handle is kept (no dlclose): the pointer must stay valid as long as NCCL is loaded.
  return state->found != nullptr ? 1 : 0;
}

void* lookup(const char* name) {
  std::string strong = std::string("pnccl") + name;
  std::string weak = std::string("nccl") + name;
  if (void* p = dlsym(RTLD_NEXT, strong.c_str())) return p;
  if (void* p = dlsym(RTLD_NEXT, weak.c_str()); p != nullptr && !is_own(p)) return p;
  ScanState state{{strong.c_str(), weak.c_str()}};
  dl_iterate_phdr(&scan_object, &state);
  return state.found;
}

}  // namespace

void* resolve_real(format::Func func, const char* name) noexcept {
  auto index = static_cast<std::size_t>(func);
  if (index >= kFuncs) return nullptr;
  void* p = g_real[index].load(std::memory_order_acquire);
  if (p != nullptr) return p;
  p = lookup(name);
  if (p != nullptr) g_real[index].store(p, std::memory_order_release);
  return p;
}

void* resolve_real_extra(const char* name) noexcept {
  return lookup(name);
}

ncclResult_t missing_real(format::Func func, const char* name) noexcept {
  auto index = static_cast<std::size_t>(func);
  if (index < kFuncs && !g_reported[index].exchange(true)) {
    std::fprintf(stderr,
                 "ncclwatch: nccl%s called but no libnccl in the process defines it (an older "
                 "NCCL? a lookup by name finds the shim's wrapper); returning "
                 "ncclInternalError\n",
                 name);
  }
  // A linked application cannot get here for a function its NCCL lacks (it would not link), but
  // a client that looks functions up by name (dlsym, weak declarations) finds the shim's wrapper
  // for every hooked function, also those newer than the real NCCL (ncclCommShrink before 2.28):
  // an internal error is the honest answer for a call that reached no NCCL at all.
  return ncclInternalError;
}

}  // namespace ncclwatch::shim

#include "cupti_api.h"

#include <dlfcn.h>

#include "library_finder.h"

namespace ncclwatch::shim::gpu {
namespace {

template <typename F>
bool resolve(void* handle, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (fn == nullptr && missing.empty()) missing = name;
  return fn != nullptr;
}

}  // namespace

bool CuptiApi::load_from(const std::string& candidate, std::string& why) {
  // RTLD_NOLOAD first: a CUPTI the application already loaded must be shared, not duplicated
  // (two copies would each think they own the device).
  void* h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* err = dlerror();
    why = err ? err : ("cannot open " + candidate);
    return false;
  }
  std::string missing;
  resolve(h, "cuptiGetVersion", GetVersion, missing);
  resolve(h, "cuptiGetResultString", GetResultString, missing);
  resolve(h, "cuptiSubscribe", Subscribe, missing);
  resolve(h, "cuptiUnsubscribe", Unsubscribe, missing);
  resolve(h, "cuptiEnableCallback", EnableCallback, missing);
  resolve(h, "cuptiGetTimestamp", GetTimestamp, missing);
  resolve(h, "cuptiActivityEnable", ActivityEnable, missing);
  resolve(h, "cuptiActivityDisable", ActivityDisable, missing);
  resolve(h, "cuptiActivityRegisterCallbacks", ActivityRegisterCallbacks, missing);
  resolve(h, "cuptiActivityGetNextRecord", ActivityGetNextRecord, missing);
  resolve(h, "cuptiActivityGetNumDroppedRecords", ActivityGetNumDroppedRecords, missing);
  resolve(h, "cuptiActivityFlushAll", ActivityFlushAll, missing);
  if (!missing.empty()) {
    why = candidate + " lacks " + missing;
    dlclose(h);
    return false;
  }
  // Optional: older CUPTIs lack these; the tracer degrades (all API records, measured clock).
  std::string ignored;
  resolve(h, "cuptiActivityEnableDriverApi", ActivityEnableDriverApi, ignored);
  resolve(h, "cuptiActivityEnableRuntimeApi", ActivityEnableRuntimeApi, ignored);
  resolve(h, "cuptiActivityRegisterTimestampCallback", ActivityRegisterTimestampCallback, ignored);
  resolve(h, "cuptiFinalize", Finalize, ignored);
  handle = h;
  path = candidate;
  return true;
}

bool CuptiApi::load(std::string& why) {
  std::string last = "no libcupti found";
  for (const auto& candidate : cupti_candidates()) {
    std::string reason;
    if (load_from(candidate, reason)) return true;
    last = reason;
  }
  why = last;
  return false;
}

const char* CuptiApi::result_string(CUptiResult r) const {
  const char* s = nullptr;
  if (GetResultString != nullptr && GetResultString(r, &s) == CUPTI_SUCCESS && s != nullptr)
    return s;
  return "unknown CUPTI error";
}

}  // namespace ncclwatch::shim::gpu

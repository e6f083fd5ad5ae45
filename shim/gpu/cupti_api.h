// The CUPTI functions the shim uses, resolved with dlsym from a libcupti found at run time
// (the shim never links CUPTI). Declared from the real cupti.h so signatures cannot drift.
#pragma once

#include <cupti.h>

#include <string>

namespace ncclwatch::shim::gpu {

struct CuptiApi {
  void* handle = nullptr;
  std::string path;
  decltype(&::cuptiGetVersion) GetVersion = nullptr;
  decltype(&::cuptiGetResultString) GetResultString = nullptr;
  decltype(&::cuptiSubscribe) Subscribe = nullptr;
  decltype(&::cuptiUnsubscribe) Unsubscribe = nullptr;
  decltype(&::cuptiEnableCallback) EnableCallback = nullptr;
  decltype(&::cuptiGetTimestamp) GetTimestamp = nullptr;
  decltype(&::cuptiActivityEnable) ActivityEnable = nullptr;
  decltype(&::cuptiActivityDisable) ActivityDisable = nullptr;
  decltype(&::cuptiActivityEnableDriverApi) ActivityEnableDriverApi = nullptr;
  decltype(&::cuptiActivityEnableRuntimeApi) ActivityEnableRuntimeApi = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) ActivityRegisterCallbacks = nullptr;
  decltype(&::cuptiActivityRegisterTimestampCallback) ActivityRegisterTimestampCallback = nullptr;
  decltype(&::cuptiActivityGetNextRecord) ActivityGetNextRecord = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) ActivityGetNumDroppedRecords = nullptr;
  decltype(&::cuptiActivityFlushAll) ActivityFlushAll = nullptr;
  decltype(&::cuptiFinalize) Finalize = nullptr;  // optional

  // Tries each candidate path (library_finder.h) until one has every required function.
  // On failure returns false and says why in `why`.
  bool load(std::string& why);
  // Loads exactly `path` (tests, benchmarks).
  bool load_from(const std::string& path, std::string& why);
  const char* result_string(CUptiResult r) const;
};

}  // namespace ncclwatch::shim::gpu

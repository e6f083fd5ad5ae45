// The parts of Nsight Systems' SQLite export schema ncclwatch reads, checked by column name
// (PRAGMA table_info) so that any export version with those columns works and one without them
// is said in one line. Tables beyond the kernels and the string table are optional: a missing
// one (no TARGET_INFO_GPU, no NVTX) only leaves out what it would have told.
#pragma once

#include <string>
#include <vector>

#include "nsys/sqlite_file.h"

namespace ncclwatch::nsys {

// What the file offers, as column expressions ready for a SELECT (empty: not available).
struct ExportSchema {
  // CUPTI_ACTIVITY_KIND_KERNEL (required): start, end, deviceId, streamId, globalPid and a name
  // (demangledName, else shortName, through StringIds).
  std::string kernel_name;          // "demangledName" or "shortName"
  bool kernel_correlation = false;  // correlationId (ties kernels to launches)
  // CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET (optional; bytes optional).
  bool memcpy = false, memcpy_bytes = false, memcpy_correlation = false;
  bool memset = false, memset_bytes = false, memset_correlation = false;
  // CUPTI_ACTIVITY_KIND_RUNTIME (optional): start, end, globalTid, correlationId.
  bool runtime = false;
  // NVTX_EVENTS (optional): start, end, eventType, globalTid and text and/or textId.
  bool nvtx = false, nvtx_text = false, nvtx_text_id = false;
  // TARGET_INFO_SESSION_START_TIME: utcEpochNs, systemClockNs (wall clock of the timestamps).
  bool session_start = false;
  // TARGET_INFO_SYSTEM_ENV: name, value (Hostname, DeviceEnvironment).
  bool system_env = false;
  // META_DATA_CAPTURE: name, value (the launched process's environment).
  bool capture_meta = false;
  // TARGET_INFO_GPU: id, busLocation (PCI bus id of each device).
  bool gpu_info = false;
  // ENUM_NSYS_EVENT_TYPE: id, name (NVTX range event types by name).
  bool event_types = false;
};

// Fills `schema` from `db`; false with `why` when the file lacks what every use needs (the
// kernel table with its columns, or the string table): then it is not an export ncclwatch can
// read (or not one of a CUDA trace).
bool read_schema(const SqliteFile& db, ExportSchema& schema, std::string& why);

}  // namespace ncclwatch::nsys

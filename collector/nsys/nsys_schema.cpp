#include "nsys/nsys_schema.h"

#include <algorithm>
#include <initializer_list>

#include <fmt/format.h>

namespace ncclwatch::nsys {
namespace {

bool has_all(const std::vector<std::string>& cols, std::initializer_list<const char*> want,
             std::string* missing = nullptr) {
  for (const char* w : want) {
    if (std::find(cols.begin(), cols.end(), w) == cols.end()) {
      if (missing != nullptr) *missing = w;
      return false;
    }
  }
  return true;
}

bool has(const std::vector<std::string>& cols, const char* c) {
  return std::find(cols.begin(), cols.end(), c) != cols.end();
}

}  // namespace

bool read_schema(const SqliteFile& db, ExportSchema& s, std::string& why) {
  if (!db.has_table("CUPTI_ACTIVITY_KIND_KERNEL")) {
    why = db.has_table("StringIds") || db.has_table("NVTX_EVENTS")
              ? "an Nsight Systems export without CUDA kernels (no CUPTI_ACTIVITY_KIND_KERNEL "
                "table: was it captured with --trace=cuda?)"
              : "not an Nsight Systems SQLite export (no CUPTI_ACTIVITY_KIND_KERNEL table)";
    return false;
  }
  const auto kernel = db.columns("CUPTI_ACTIVITY_KIND_KERNEL");
  std::string missing;
  if (!has_all(kernel, {"start", "end", "deviceId", "streamId", "globalPid"}, &missing)) {
    why = fmt::format(
        "CUPTI_ACTIVITY_KIND_KERNEL has no column {} (an export schema ncclwatch "
        "does not know)",
        missing);
    return false;
  }
  s.kernel_name = has(kernel, "demangledName") ? "demangledName"
                  : has(kernel, "shortName")   ? "shortName"
                                               : "";
  if (s.kernel_name.empty() || !has_all(db.columns("StringIds"), {"id", "value"})) {
    why =
        "kernel names are missing (no demangledName/shortName column, or no StringIds table "
        "with id and value)";
    return false;
  }
  s.kernel_correlation = has(kernel, "correlationId");
  const auto activity = {"start", "end", "deviceId", "streamId", "globalPid"};
  const auto memcpy = db.columns("CUPTI_ACTIVITY_KIND_MEMCPY");
  s.memcpy = has_all(memcpy, activity);
  s.memcpy_bytes = has(memcpy, "bytes");
  s.memcpy_correlation = has(memcpy, "correlationId");
  const auto memset = db.columns("CUPTI_ACTIVITY_KIND_MEMSET");
  s.memset = has_all(memset, activity);
  s.memset_bytes = has(memset, "bytes");
  s.memset_correlation = has(memset, "correlationId");
  s.runtime = has_all(db.columns("CUPTI_ACTIVITY_KIND_RUNTIME"),
                      {"start", "end", "globalTid", "correlationId"});
  const auto nvtx = db.columns("NVTX_EVENTS");
  s.nvtx_text = has(nvtx, "text");
  s.nvtx_text_id = has(nvtx, "textId");
  s.nvtx =
      has_all(nvtx, {"start", "end", "eventType", "globalTid"}) && (s.nvtx_text || s.nvtx_text_id);
  s.session_start =
      has_all(db.columns("TARGET_INFO_SESSION_START_TIME"), {"utcEpochNs", "systemClockNs"});
  s.system_env = has_all(db.columns("TARGET_INFO_SYSTEM_ENV"), {"name", "value"});
  s.capture_meta = has_all(db.columns("META_DATA_CAPTURE"), {"name", "value"});
  s.gpu_info = has_all(db.columns("TARGET_INFO_GPU"), {"id", "busLocation"});
  s.event_types = has_all(db.columns("ENUM_NSYS_EVENT_TYPE"), {"id", "name"});
  return true;
}

}  // namespace ncclwatch::nsys

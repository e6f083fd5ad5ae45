#include "trace/record_names.h"

#include "model/func_names.h"

#include <array>
#include <string>

namespace ncclwatch::trace {
namespace {

constexpr std::array<const char*, static_cast<std::size_t>(format::RecordKind::kCount)> kKindNames =
    {"invalid", "call",        "group",    "comm",   "comm_end", "identity",  "clock",    "kernel",
     "string",  "kernel_link", "coll_gpu", "launch", "nvtx",     "unique_id", "in_flight"};

std::string unknown(unsigned raw) {
  return "unknown(" + std::to_string(raw) + ")";
}

}  // namespace

std::string func_name(uint8_t raw) {
  if (raw >= static_cast<uint8_t>(format::Func::kCount)) return unknown(raw);
  return model::func_name(static_cast<format::Func>(raw));
}

std::string func_name(format::Func func) {
  return func_name(static_cast<uint8_t>(func));
}

std::string kind_name(uint8_t raw_kind) {
  if (raw_kind == 0 || raw_kind >= kKindNames.size()) return unknown(raw_kind);
  return kKindNames[raw_kind];
}

std::optional<format::RecordKind> kind_from_name(std::string_view name) {
  for (std::size_t i = 1; i < kKindNames.size(); ++i) {
    if (name == kKindNames[i]) return static_cast<format::RecordKind>(i);
  }
  return std::nullopt;
}

std::string activity_name(uint8_t raw) {
  switch (raw) {
    case 0:
      return "kernel";
    case 1:
      return "memcpy";
    case 2:
      return "memset";
    default:
      return unknown(raw);
  }
}

std::string launch_api_name(uint8_t raw) {
  switch (raw) {
    case 0:
      return "other";
    case 1:
      return "runtime_kernel";
    case 2:
      return "runtime_graph";
    case 3:
      return "driver_kernel";
    case 4:
      return "driver_graph";
    default:
      return unknown(raw);
  }
}

std::string rank_source_name(uint8_t raw) {
  switch (raw) {
    case 0:
      return "unknown";
    case 1:
      return "env";
    case 2:
      return "first_comm";
    default:
      return unknown(raw);
  }
}

}  // namespace ncclwatch::trace

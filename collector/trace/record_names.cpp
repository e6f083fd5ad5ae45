#include "trace/record_names.h"

#include "model/enum_table.h"
#include "model/func_names.h"

#include <array>
#include <string>

namespace ncclwatch::trace {
namespace {

using model::enum_names;

// One table per enum of the record format, indexed by the raw value.
constexpr auto kKindNames = enum_names<format::RecordKind>(
    {"invalid", "call", "group", "comm", "comm_end", "identity", "clock", "kernel", "string",
     "kernel_link", "coll_gpu", "launch", "nvtx", "unique_id", "in_flight", "sched", "step",
     "window", "gpu_timing"});
constexpr auto kActivityNames = enum_names<format::ActivityKind>({"kernel", "memcpy", "memset"});
constexpr auto kLaunchApiNames = enum_names<format::LaunchApi>(
    {"other", "runtime_kernel", "runtime_graph", "driver_kernel", "driver_graph"});
constexpr auto kRankSourceNames = enum_names<format::RankSource>({"unknown", "env", "first_comm"});
constexpr auto kInFlightSourceNames =
    enum_names<format::InFlightSource>({"drain", "exit", "salvage", "watchdog"});
// Trace states are constants (1-3), not an enum.
constexpr std::array<const char*, 3> kTraceStateNames = {"open", "closed", "salvaged"};
constexpr auto kStepSourceNames =
    enum_names<format::StepSource>({"collectives", "nvtx", "interval"});
constexpr auto kStepTimingNames = enum_names<format::StepTiming>({"none", "cupti", "cuda-events"});
constexpr auto kWindowTriggerNames = enum_names<format::WindowTrigger>(
    {"whole-run", "schedule", "on-demand", "step-time", "wait", "hang"});
constexpr auto kGpuTimingReasonNames =
    enum_names<format::GpuTimingReason>({"setting", "auto", "window"});
static_assert(format::kTraceStateOpen == 1 && format::kTraceStateSalvaged == 3);

std::string unknown(unsigned raw) {
  return "unknown(" + std::to_string(raw) + ")";
}

template <std::size_t N>
std::string name_in(const std::array<const char*, N>& names, unsigned raw) {
  return raw < N ? names[raw] : unknown(raw);
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
  return name_in(kActivityNames, raw);
}

std::string launch_api_name(uint8_t raw) {
  return name_in(kLaunchApiNames, raw);
}

std::string rank_source_name(uint8_t raw) {
  return name_in(kRankSourceNames, raw);
}

std::string in_flight_source_name(uint8_t raw) {
  return name_in(kInFlightSourceNames, raw);
}

std::string step_source_name(uint8_t raw) {
  return name_in(kStepSourceNames, raw);
}

std::string step_timing_name(uint8_t raw) {
  return name_in(kStepTimingNames, raw);
}

std::string window_trigger_name(uint8_t raw) {
  return name_in(kWindowTriggerNames, raw);
}

std::string gpu_timing_reason_name(uint8_t raw) {
  return name_in(kGpuTimingReasonNames, raw);
}

std::string trace_state_name(uint32_t state) {
  // kTraceState* start at 1; 0 is a header nobody finished writing.
  return state >= 1 && state <= kTraceStateNames.size() ? kTraceStateNames[state - 1]
                                                        : unknown(state);
}

}  // namespace ncclwatch::trace

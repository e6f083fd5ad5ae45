// Stable, lower-case names for the enums of the record format (used in JSON, problems and
// `ncclwatch dump --kinds`). Unknown values get "unknown(N)" so nothing untrusted is dropped
// silently from a printout.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ncclwatch/format.h"

namespace ncclwatch::trace {

// "all_reduce", "send", "comm_init_rank", ...; "unknown(N)" for values outside the enum.
std::string func_name(format::Func func);
std::string func_name(uint8_t raw);

// "call", "kernel", "kernel_link", ...; "unknown(N)" for values outside the enum.
std::string kind_name(uint8_t raw_kind);

// Inverse of kind_name for the known kinds (used to parse --kinds).
std::optional<format::RecordKind> kind_from_name(std::string_view name);

// "kernel", "memcpy", "memset"; "unknown(N)".
std::string activity_name(uint8_t raw);

// "other", "runtime_kernel", "runtime_graph", "driver_kernel", "driver_graph"; "unknown(N)".
std::string launch_api_name(uint8_t raw);

// "unknown", "env", "first_comm"; "unknown(N)".
std::string rank_source_name(uint8_t raw);

// "drain", "exit", "salvage", "watchdog" (format::InFlightSource); "unknown(N)".
std::string in_flight_source_name(uint8_t raw);

// How a step was found: "collectives", "nvtx", "interval" (format::StepSource); "unknown(N)".
std::string step_source_name(uint8_t raw);

// Where a step's GPU figures come from: "none", "cupti", "cuda-events"; "unknown(N)".
std::string step_timing_name(uint8_t raw);

// Why a capture window opened: "whole-run", "schedule", "on-demand", "step-time", "wait",
// "hang" (format::WindowTrigger); "unknown(N)".
std::string window_trigger_name(uint8_t raw);

// Why GPU timing was switched: "setting", "auto", "window" (format::GpuTimingReason);
// "unknown(N)".
std::string gpu_timing_reason_name(uint8_t raw);

// A trace header's state: "open", "closed", "salvaged" (format::kTraceState*); "unknown(N)".
std::string trace_state_name(uint32_t state);

}  // namespace ncclwatch::trace

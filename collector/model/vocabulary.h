// The words every report part uses for the same things, defined once: how a comm id is written
// (text and JSON alike, so JSON objects join on it), a severity's name, nanoseconds as JSON
// microseconds. Formatting only; no analysis.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

#include "model/job_trace.h"
#include "model/report.h"

namespace ncclwatch::model {

// "0x%016x": every comm id in text and JSON (comms[].id, incomplete[].comm, buckets[].comm_id ...).
inline std::string comm_hex(uint64_t id) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(id));
  return buf;
}

// "info", "warning", "critical": JSON findings' severity.
inline const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return "critical";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      break;
  }
  return "info";
}

// JSON times are microseconds (docs/report-schema.md); nanoseconds as counted (int64) or as
// averaged (double).
template <typename Ns>
requires std::is_arithmetic_v<Ns>
double us(Ns ns) {
  return static_cast<double>(ns) / 1000.0;
}

// "SOURCE: MESSAGE": one input problem (a reader's warning) as a line of text or a JSON string.
inline std::string problem_line(const InputProblem& p) {
  return p.source + ": " + p.message;
}

}  // namespace ncclwatch::model

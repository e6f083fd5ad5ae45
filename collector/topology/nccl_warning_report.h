// NCCL's WARN lines in the report and after `ncclwatch run`: the first groups as findings (rank,
// host, the line), all groups in the section "NCCL warnings" (bounded, the rest counted) and in
// JSON `nccl_warnings` (docs/report-schema.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "model/job_trace.h"
#include "model/report.h"
#include "topology/nccl_warnings.h"

namespace ncclwatch::topology {

inline constexpr std::size_t kWarningFindings = 3;  // groups shown as findings
inline constexpr std::size_t kWarningListed = 20;   // groups listed in the section
inline constexpr std::size_t kWarningsEchoed = 10;  // groups `ncclwatch run` echoes

// Adds findings (at warning level, source "nccl", ahead of the report's other findings: NCCL's
// own word on a failure comes first), the section and the JSON; nothing when there is no line.
// The processes are tied to the job's ranks by host and pid (NCCL prints the host name up to its
// first '.').
void add_nccl_warnings(const NcclWarnings& warnings, const model::JobTrace& job,
                       model::Report& report);

// The WARN lines NCCL wrote into the debug logs the shim captured in `dir` (regular files named
// nccl-debug.*, changed at or after `since`), as lines for `ncclwatch run` to say after the job:
// a heading line, then the first line of each group as NCCL wrote it with how many alike (at most
// kWarningsEchoed groups, then how many more). Empty when there is none.
std::vector<std::string> captured_warning_lines(const std::string& dir,
                                                std::chrono::system_clock::time_point since);

}  // namespace ncclwatch::topology

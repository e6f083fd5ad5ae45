// The topology check's entry points: find NCCL's logs and dumps in a trace directory, parse them,
// check them against the job, and append findings, a "Topology" section and JSON `topology` to
// the report. Also used alone by `ncclwatch topo LOG...` (no job: pass an empty JobTrace).
#pragma once

#include <string>
#include <vector>

#include "model/job_trace.h"
#include "model/match_result.h"
#include "model/report.h"

namespace ncclwatch::topology {

// NCCL debug logs and XML dumps under `dir` (not recursive): nccl-debug.*, nccl-topo.*.xml,
// nccl-graph.*.xml, and any *.log / *.txt file whose first 64 KiB hold an " NCCL INFO " line.
// Sorted by name. A missing or unreadable directory gives an empty list.
std::vector<std::string> find_logs(const std::string& dir);

// Parses `logs` (NCCL_DEBUG logs and NCCL_TOPO/GRAPH_DUMP_FILE XML; any other file is counted and
// skipped), checks them together with the job's ranks (RankInfo host/pid, comm handles) and
// matched instances (bus bandwidth), and appends to `report`: one Finding per problem (source
// "topology"), a "Topology" section and report.json["topology"] =
// {findings[] {kind, severity, comm, ranks, message, evidence, advice}, comms[], parse{...}}.
// Returns whether anything in `logs` was recognised as NCCL's (an NCCL INFO line or an XML dump);
// when not, the section says so rather than "no topology problem found".
bool add_to_report(const std::vector<std::string>& logs, const model::JobTrace& job,
                   const model::MatchResult& match, model::Report& report);

}  // namespace ncclwatch::topology

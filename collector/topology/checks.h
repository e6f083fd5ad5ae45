// The topology findings: what NCCL's logs (and the job's own measurements) show is wrong with
// how ranks are connected. Each check appends TopoFindings; topology_report renders them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/job_trace.h"
#include "model/match_result.h"
#include "model/report.h"
#include "topology/log_parser.h"
#include "topology/nccl_log.h"

namespace ncclwatch::topology {

struct TopoFinding {
  std::string kind;  // "intra-node-not-p2p", "ring-extra-crossings", "net-socket", ...
  model::Severity severity = model::Severity::kWarning;
  std::string comm;        // NCCL commId, "nranks N #k" for logs without one, or the job's comm id
  std::vector<int> ranks;  // ranks inside that comm
  std::string message;     // one line, numbers included
  std::string evidence;    // the log line (or measurement) that shows it
  std::string advice;      // what to try
};

// One communicator as the checks see it: the log group plus what the job adds.
struct CommContext {
  const CommGroup* group = nullptr;  // null for job-only comms
  std::string name;                  // what findings call it
  int nranks = -1;
  int nnodes = -1;                         // NCCL's count (2.18+ logs), -1 unknown
  std::map<int, std::string> host_of;      // comm rank -> host (logs, then job)
  std::map<int, std::string> job_host_of;  // comm rank -> RankInfo::host (job only)
  uint64_t job_comm = 0;                   // model comm id, 0 if not joined
};

// Builds one CommContext per log group, joined to the job's comms through (host, pid, comm
// handle); job comms with no log group are added with job hosts only.
std::vector<CommContext> build_contexts(const LogSet& logs, const std::vector<CommGroup>& groups,
                                        const model::JobTrace& job,
                                        const model::MatchResult& match);

// False when the comm's host names disagree with NCCL's node count (node-count-mismatch says so);
// the host-based checks skip such comms.
bool hosts_trusted(const CommContext& c);

// Checks on NCCL's own view (logs and dumps).
void check_transports(const LogSet& logs, const std::vector<CommContext>& comms,
                      std::vector<TopoFinding>& out);
void check_rings(const LogSet& logs, const std::vector<CommContext>& comms,
                 std::vector<TopoFinding>& out);
void check_agreement(const LogSet& logs, const std::vector<CommContext>& comms,
                     std::vector<TopoFinding>& out);
void check_node_count(const LogSet& logs, const std::vector<CommContext>& comms,
                      std::vector<TopoFinding>& out);

// low-busbw: bus bandwidth (nccl-tests' definition) of the job's matched collectives, per comm,
// function and size class, against the best the job reached and what NCCL's ring graph says
// the links give.
void check_bus_bandwidth(const LogSet& logs, const std::vector<CommContext>& comms,
                         const model::JobTrace& job, const model::MatchResult& match,
                         std::vector<TopoFinding>& out);

// nccl-tests' bus bandwidth factor for a collective over n ranks (0 where it is not defined),
// and the bytes it counts as the operation's size given the call's own bytes.
double busbw_factor(model::Func f, int n);
double algbw_bytes(model::Func f, uint64_t call_bytes, int n);

// "0-3,8,10-11"
std::string rank_list(const std::vector<int>& ranks);

}  // namespace ncclwatch::topology

// Bus bandwidth the job achieved, per collective kind, size class and scope (inside a node or
// across nodes), in nccl-tests' terms (busbw_factor, algbw_bytes in checks.h): the table
// `ncclwatch diff` compares between runs, and the one per-instance measure the low-busbw check
// uses too. An instance's time is the shortest GPU interval among its members: the last rank
// to arrive waits for nobody, so its kernel is the transfer itself, on its own clock.
#pragma once

#include "model/job_trace.h"
#include "model/match_result.h"
#include "model/report.h"

namespace ncclwatch::topology {

struct InstanceBusbw {
  double gbs = 0;   // bus bandwidth, GB/s (bytes/ns)
  double size = 0;  // bytes nccl-tests counts as the operation's size
  int nranks = 0;
};

// False when the instance has no bus bandwidth: fewer than 2 members, an op without a factor,
// or no member with a GPU interval (host-only timing says nothing about bandwidth).
bool instance_busbw(const model::CollectiveInstance& inst, const model::JobTrace& job,
                    const model::MatchResult& match, InstanceBusbw& out);

// Below this size latency, not bandwidth, sets the time (no bandwidth verdicts there).
inline constexpr double kBandwidthBoundBytes = 1 << 20;

// report.json["bus_bandwidth"]: one row per (op, size class [2^k, 2^(k+1)) bytes, scope) with
// the calls, median busbw, its spread over the calls (1.4826 x MAD), the standard error of the
// median's estimate, and the best call (docs/report-schema.md). Always written (empty without
// GPU-timed collectives).
void add_busbw_table(const model::JobTrace& job, const model::MatchResult& match,
                     model::Report& report);

}  // namespace ncclwatch::topology

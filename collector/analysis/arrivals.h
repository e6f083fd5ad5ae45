// When each rank arrived at each matched collective, on the aligned clock: the raw material
// of straggler analysis and of the "waiting for peers" part of exposed communication.
//
// Arrival is the NCCL kernel start when every member of the instance has GPU timing (that is
// when the rank's GPU was ready to communicate), else the call entry on the host for all
// members (mixing the two within one instance would compare different things).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "analysis/interval_set.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::analysis {

struct InstanceArrival {
  int64_t last_ns = 0;       // latest arrival (aligned)
  int64_t median_ns = 0;     // median arrival (aligned)
  int32_t last_member = -1;  // index into MatchResult::members of the unique last arrival, -1 tie
  bool gpu = false;          // arrivals are kernel starts (else call entries)
  bool used = false;         // a collective with >= 2 members whose calls exist
};

struct Arrivals {
  std::vector<int64_t> member_ns;  // per MatchResult::members index (aligned)
  // Per used instance, over its members' slots [first, first + nmembers): the members in
  // arrival order, as offsets from `first` (equal arrivals: lower member index first). Who
  // waited for whom needs this order and the median needs the sort anyway: sorted once here.
  std::vector<uint32_t> by_arrival;
  std::vector<InstanceArrival> instances;  // per MatchResult::instances index
  uint64_t gpu_instances = 0;
  uint64_t host_instances = 0;
  int64_t tie_ns = 0;  // ties within this are nobody's fault

  // Two arrivals closer than `tie_ns` are a tie: no rank is "last" in that instance.
  // `workers`: threads over chunks of instances (the result does not depend on it).
  static Arrivals of(const model::JobTrace& job, const model::MatchResult& match,
                     const model::ClockAlignment& clocks, int64_t tie_ns, unsigned workers = 1);

 private:
  // Instance i's arrivals into member_ns / by_arrival / instances[i]; false if unusable.
  bool measure(const model::JobTrace& job, const model::MatchResult& match,
               const model::ClockAlignment& clocks, std::size_t i,
               std::vector<std::pair<int64_t, uint32_t>>& sorted);
};

// Default tie epsilon: the clock alignment cannot order arrivals closer than its residual, and
// below 2 µs launch jitter alone decides who is last.
int64_t default_tie_ns(const model::ClockAlignment& clocks);

}  // namespace ncclwatch::analysis

namespace ncclwatch::analysis {

// Per rank (JobTrace::ranks index), the time its collectives spent waiting for the last peer:
// for every instance with GPU arrivals, [own kernel start, last rank's arrival) clipped to own
// kernel, on the rank's own clock. Host-arrival instances contribute nothing (no kernel).
std::vector<IntervalSet> peer_wait_sets(const model::JobTrace& job, const model::MatchResult& match,
                                        const model::ClockAlignment& clocks,
                                        const Arrivals& arrivals);

}  // namespace ncclwatch::analysis

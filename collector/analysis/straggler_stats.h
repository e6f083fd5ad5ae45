// Per-rank arrival statistics over the matched collectives: how often each rank arrived last,
// how late it was against the median rank, the waiting it inflicted on the others, and its
// lateness per step. Pure arithmetic on Arrivals; verdicts are straggler_verdict's job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/arrivals.h"
#include "analysis/overlap.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::analysis {

struct RankArrivalStats {
  std::size_t rank_index = 0;
  int32_t rank = -1;
  std::string host;
  uint64_t instances = 0;      // instances it took part in
  uint64_t decided = 0;        // ... where one rank arrived last beyond the tie epsilon
  uint64_t last = 0;           // ... where that rank was this one
  double fair_last_pct = 0.0;  // expected % if arrival order were random: mean of 1/nmembers
  int64_t lateness_when_last_sum_ns = 0;
  int64_t lateness_sum_ns = 0;            // sum of (own arrival − median arrival)
  int64_t inflicted_wait_ns = 0;          // waiting it caused (shared with other late members)
  int64_t exposed_inflicted_ns = 0;       // ... of it, the part compute did not hide (its cost)
  int64_t lateness_spread_ns = 0;         // 1.4826 x MAD of its own lateness: its jitter
  std::vector<int64_t> step_lateness_ns;  // per own step: worst lateness in it (INT64_MIN: none)
  // Per own step: 1-based position, among its calls in that step, of the collective where that
  // worst lateness happened (the first collective after its delay), and that collective's func.
  std::vector<uint16_t> step_late_ordinal;
  std::vector<format::Func> step_late_func;
  // Per own step: exposed waiting it caused its peers in that step's instances: between
  // consecutive arrivals, the members still missing share the wait of those already there,
  // each waiting member counted with the share of its waiting compute did not hide.
  std::vector<int64_t> step_exposed_inflicted_ns;
  uint64_t func_counts[static_cast<int>(format::Func::kCount)] = {};

  // Over decided instances: DDP's later buckets often queue behind the first and start together
  // on every rank, and such ties say nothing about who is late.
  double last_pct() const {
    return decided ? 100.0 * static_cast<double>(last) / static_cast<double>(decided) : 0.0;
  }
  double lateness_when_last_ns() const {
    return last ? static_cast<double>(lateness_when_last_sum_ns) / static_cast<double>(last) : 0.0;
  }
  double mean_lateness_ns() const {
    return instances ? static_cast<double>(lateness_sum_ns) / static_cast<double>(instances) : 0.0;
  }
};

struct HostArrivalStats {
  std::string host;
  std::vector<std::size_t> rank_indices;
  uint64_t instances = 0;  // instances with members both on and off this host
  uint64_t decided = 0;    // ... where one host's latest rank beat every other host's by > tie
  uint64_t last = 0;       // ... where that host was this one
  double last_pct() const {
    return decided ? 100.0 * static_cast<double>(last) / static_cast<double>(decided) : 0.0;
  }
};

struct ArrivalStats {
  std::vector<RankArrivalStats> ranks;  // per JobTrace::ranks index
  std::vector<HostArrivalStats> hosts;
  int64_t noise_ns = 0;  // median over ranks of lateness_spread_ns
  // Sum over every member of every instance in a steady step (of its first member) of
  // (last arrival − own arrival) x its exposure: all the exposed waiting for peers, whoever
  // caused it.
  int64_t steady_exposed_wait_ns = 0;

  static ArrivalStats of(const model::JobTrace& job, const model::MatchResult& match,
                         const Arrivals& arrivals, const std::vector<RankOverlap>& overlaps,
                         unsigned workers = 1);
};

}  // namespace ncclwatch::analysis

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
  int64_t lateness_sum_ns = 0;  // sum of (own arrival − median arrival)
  int64_t inflicted_wait_ns = 0;
  int64_t lateness_spread_ns = 0;         // 1.4826 x MAD of its own lateness: its jitter
  std::vector<int64_t> step_lateness_ns;  // per own step: worst lateness in it (INT64_MIN: none)
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

  static ArrivalStats of(const model::JobTrace& job, const model::MatchResult& match,
                         const Arrivals& arrivals, const std::vector<RankOverlap>& overlaps);
};

}  // namespace ncclwatch::analysis

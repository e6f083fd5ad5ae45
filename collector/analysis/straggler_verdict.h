// Which ranks are stragglers, how (persistent, periodic, spikes), and why (gpu-slow,
// host-stall, network, unknown), with the evidence in numbers.
//
// Thresholds are relative to the run's own noise (stated in the report):
//   noise     = median over ranks of each rank's lateness jitter (1.4826 x MAD);
//   late      = max(3 x noise, 100 µs, 1% of the median step) of mean lateness against the median
//   rank, and either
//               arriving last (among instances not tied) at more than halfway between its fair
//               share (1/comm size) and 100 %, or being a spike-late in half its steady steps;
//   spike     = a step where the rank is max(10 x noise, 500 µs, 10% of the median step) late;
//               three or more on one progression (every N steps) make a periodic straggler,
//               else three or more make a spiky one; the rest are listed as one-offs.
// So a clean run, whose ranks take turns arriving last within jitter, reports none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/arrivals.h"
#include "analysis/overlap.h"
#include "analysis/straggler_stats.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::analysis {

inline constexpr int64_t kLateFloorNs = 100'000;
inline constexpr int64_t kSpikeFloorNs = 500'000;
inline constexpr double kLateNoiseFactor = 3.0;
inline constexpr double kSpikeNoiseFactor = 10.0;
inline constexpr double kLateStepShare = 0.01;  // of the median steady step
inline constexpr double kSpikeStepShare = 0.10;

enum class Pattern : uint8_t { kPersistent, kPeriodic, kSpikes };
const char* to_string(Pattern p);

struct Straggler {
  std::size_t rank_index = 0;
  int32_t rank = -1;
  std::string host;
  double arrived_last_pct = 0;
  double mean_lateness_ns = 0;       // vs the median rank, over all its instances
  double lateness_when_last_ns = 0;  // vs the median rank, over the instances it was last in
  int64_t inflicted_wait_ns = 0;
  Pattern pattern = Pattern::kPersistent;
  std::size_t period_steps = 0;          // kPeriodic: every N steps
  std::vector<std::size_t> spike_steps;  // kPeriodic / kSpikes: step indices (0-based)
  double spike_lateness_ns = 0;          // mean lateness in those steps
  bool node_problem = false;             // all ranks of its host are late together
  std::string cause;                     // gpu-slow | host-stall | network | unknown
  std::string evidence;                  // numbers behind the cause
  std::string because;                   // the finding's clause: "its GPU idles 7.9 ms/step ..."
};

struct NodeProblem {
  std::string host;
  std::vector<int32_t> ranks;
  double arrived_last_pct = 0;
  double mean_lateness_ns = 0;
};

struct StragglerResult {
  ArrivalStats stats;
  std::vector<Straggler> stragglers;  // worst first (inflicted wait)
  std::vector<NodeProblem> nodes;
  int64_t late_ns = 0;
  int64_t spike_ns = 0;
  int64_t step_ns = 0;     // median steady step length (0: no steps)
  std::string timestamps;  // "GPU kernel starts", "host call entries", or both
  std::string what;        // "all-reduces" or "collectives"
  uint64_t instances = 0;
  int64_t tie_ns = 0;
  uint64_t gpu_instances = 0;         // instances whose arrivals are kernel starts
  uint64_t host_instances = 0;        // ... call entries
  std::vector<std::string> one_offs;  // single spike steps, for the section only

  static StragglerResult of(const model::JobTrace& job, const model::MatchResult& match,
                            const model::ClockAlignment& clocks, const Arrivals& arrivals,
                            const std::vector<RankOverlap>& overlaps);
};

}  // namespace ncclwatch::analysis

// Synthetic step summaries for the history's tests and benchmark: a job of `ranks` ranks on
// `hosts` hosts whose steps are modelled (compute, exposed communication, idle; arrival at the
// first collective and its common GPU end), with slowdowns injected over step ranges, generated
// on the fly so a run of any length costs no memory.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "history/history.h"

namespace ncclwatch::history::testing {

struct Slowdown {
  int rank = -1;                // -1: every rank
  uint64_t first = 0, end = 0;  // steps [first, end)
  double compute_ms = 0;        // more compute on that rank (a slow GPU)
  double host_ms = 0;           // its host late by this much (the GPU idles: a host stall)
  double exposed_ms = 0;        // more exposed communication (a slow network, every rank)
};

struct SimJob {
  int ranks = 8;
  int hosts = 2;
  uint64_t steps = 1000;
  uint64_t first_step = 0;
  double compute_ms = 15, exposed_ms = 2, idle_ms = 3;
  int64_t start_realtime_ns = 1'764'806'400'000'000'000;  // 2025-12-04 00:00:00 UTC
  // Host h's monotonic clock reads h x 1000 s less; its wall offset is wrong by h x this (NTP).
  double ntp_error_ms = 0;
  bool gpu = true;
  std::vector<Slowdown> slowdowns;
  // Steps [first, end) inside a capture window: their summaries carry kStepDetail.
  std::vector<std::pair<uint64_t, uint64_t>> windows;
};

// The ranks (rank r on host r % hosts) and one source per rank.
std::vector<RankSource> sim_ranks(const SimJob& job);
std::vector<std::unique_ptr<StepSource>> sim_sources(const SimJob& job);
// Rank r's summary of step s.
format::StepRecord sim_step(const SimJob& job, int rank, uint64_t step);

}  // namespace ncclwatch::history::testing

// Writes a synthetic job of trace files straight from format.h, streaming (a few MB of memory
// whatever the size), for the collector benchmark: a fixed record mix repeated, the cheapest way
// to a given record count. Realistic training jobs (steps, buckets, stragglers) at scale are
// training_rank_writer.h's.
#pragma once

#include <cstdint>
#include <string>

namespace ncclwatch::bench {

struct SyntheticJob {
  std::string dir;
  std::string job = "bench";
  int ranks = 64;
  int ranks_per_host = 8;
  uint64_t records_per_rank = 1 << 20;
  // "full": per collective a call, its launch, link and NCCL kernel, and two compute kernels with
  // their launches (8 records; what a CUPTI-mode trace looks like). "host": calls only.
  std::string mix = "full";
};

// Returns the total bytes written.
uint64_t write_synthetic_job(const SyntheticJob& spec);

}  // namespace ncclwatch::bench

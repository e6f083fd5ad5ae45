// One rank's GPU time split the way HTA splits it: communication (NCCL kernels, and the other
// communication kernel families of collector/kernels), computation (every other kernel) and busy
// (any GPU activity, memcpy and memset included). Memcpy and memset are neither comm nor compute,
// as in HTA's comm/comp overlap.
#pragma once

#include <cstdint>

#include "analysis/interval_set.h"
#include "model/rank_trace.h"

namespace ncclwatch::analysis {

enum class CommSource : uint8_t {
  kNone = 0,           // no GPU timing of collectives (host-only records)
  kNcclKernels = 1,    // KernelEvent::nccl: NCCL's kernels and the other communication families
  kCallEvents = 2,     // CallEvent::gpu_start/end_ns only (lite mode: CUDA events)
  kNoCommKernels = 3,  // GPU kernels, but none is a known communication kernel
};

const char* to_string(CommSource source);

struct RankActivity {
  IntervalSet comm;
  IntervalSet compute;
  IntervalSet busy;
  CommSource source = CommSource::kNone;
  bool has_compute = false;  // overlap is measurable only when compute kernels were recorded
  int64_t first_ns = 0;      // earliest timestamp of any event (host or GPU), rank clock
  int64_t last_ns = 0;

  static RankActivity of(const model::RankTrace& rank);
  // Every set clipped to [from, to); the rest as it is.
  RankActivity clip(int64_t from, int64_t to) const;
};

}  // namespace ncclwatch::analysis

// Per-rank clock offsets that put every rank on one timeline: the clock of the reference host
// (the host of JobTrace::ranks[0]). Produced by collector/clock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclwatch::model {

struct HostOffset {
  std::string host;
  int64_t offset_ns = 0;    // added to this host's timestamps
  int64_t residual_ns = 0;  // robust spread of the estimate (MAD-based)
  uint64_t samples = 0;     // matched instances the estimate rests on
  std::string method;       // "reference", "gpu-kernel-end", "host-exit", "wall-clock", ...
  // false: the collectives' estimate could not be told from no shift, and the host keeps its
  // wall-clock relation; residual_ns is then that estimate's spread, no residual skew.
  bool significant = true;
};

struct ClockAlignment {
  std::vector<int64_t> rank_offset_ns;  // per JobTrace::ranks index
  std::vector<HostOffset> hosts;
  int64_t residual_ns = 0;  // worst residual over the hosts aligned by a significant estimate
  int64_t at(std::size_t rank_index) const {
    return rank_index < rank_offset_ns.size() ? rank_offset_ns[rank_index] : 0;
  }
};

}  // namespace ncclwatch::model

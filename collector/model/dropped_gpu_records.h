// What the collector's own checks (comm-kernel counts, the hang verdict's "kernel never
// finished") need from a rank's GPU records once a loader dropped them (the report's lean load,
// collector/pipeline/lean_load.h). The analyses' part is analysis::RankDigest.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "model/comm_family.h"

namespace ncclwatch::model {

struct DroppedGpuRecords {
  std::size_t kernels = 0;  // GPU activity records (kernels, memcpy, memset) dropped
  // Communication kernels per family (CommFamily index; kernels flagged nccl only).
  std::array<uint64_t, static_cast<std::size_t>(CommFamily::kCount)> comm_kernels{};
  // (comm id, 32-bit seq) of every kernel link whose launch has no kernel record, sorted.
  std::vector<std::pair<uint64_t, uint32_t>> launched_without_kernel;

  bool launched_without_kernel_at(uint64_t comm_id, uint32_t seq) const;
};

inline bool DroppedGpuRecords::launched_without_kernel_at(uint64_t comm_id, uint32_t seq) const {
  const std::pair<uint64_t, uint32_t> key{comm_id, seq};
  auto it = std::lower_bound(launched_without_kernel.begin(), launched_without_kernel.end(), key);
  return it != launched_without_kernel.end() && *it == key;
}

}  // namespace ncclwatch::model

// Bounds the trace volume (NCCLWATCH_KERNELS). A training step launches thousands of compute
// kernels but only tens of NCCL kernels; the analyses need every NCCL kernel and enough compute
// to measure overlap. Policies:
//   all          every kernel, memcpy and memset (default)
//   nccl         NCCL kernels only (no compute timeline: overlap analysis reports "unknown")
//   sampled:N    NCCL kernels always; compute kernels, memcpy and memset only in one 1-second
//                window out of every N (windows by GPU start time), so overlap is measured on a
//                1/N sample of the run at 1/N of the volume
// NCCL kernels are never dropped by the filter.
#pragma once

#include <cstdint>

#include "ncclwatch/format.h"
#include "record/settings.h"

namespace ncclwatch::shim::gpu {

class KernelFilter {
 public:
  using Policy = KernelPolicy;  // parsed from NCCLWATCH_KERNELS by settings.h
  KernelFilter() = default;
  // `every`: the N of sampled:N (ignored for the other policies).
  explicit KernelFilter(Policy policy, uint32_t every = 1)
      : policy_(policy), every_(policy == Policy::kSampled && every > 1 ? every : 1) {
    if (policy_ == Policy::kSampled && every_ == 1) policy_ = Policy::kAll;
  }

  bool keep(bool is_nccl, int64_t start_ns) const noexcept {
    if (is_nccl || policy_ == Policy::kAll) return true;
    if (policy_ == Policy::kNccl) return false;
    int64_t window = start_ns / kWindowNs;
    return window % every_ == 0;
  }
  Policy policy() const noexcept { return policy_; }
  uint32_t every() const noexcept { return every_; }

  // The trace header records the policy (format::kernel_filter_code) and the collector rebuilds
  // the windows from it: one constant for both.
  static constexpr int64_t kWindowNs = format::kKernelSampleWindowNs;

 private:
  Policy policy_ = Policy::kAll;
  uint32_t every_ = 1;
};

// True for NCCL's kernels (ncclKernel_*, ncclDevKernel_*, ncclSymk*): what the collector calls
// communication.
bool is_nccl_kernel_name(const char* name) noexcept;

}  // namespace ncclwatch::shim::gpu

// The families of communication kernels ncclwatch recognises by name (the table is
// collector/kernels/comm_kernel_table.cpp; docs/inputs.md says how to add one). A kernel of any
// family is communication for the analyses (KernelEvent::nccl); the family says whose it is.
#pragma once

#include <cstdint>

namespace ncclwatch::model {

enum class CommFamily : uint8_t {
  kNone = 0,             // compute (or memcpy/memset)
  kNccl = 1,             // NCCL's kernels (RCCL keeps NCCL's names)
  kMsccl = 2,            // MSCCL (inside RCCL, or the MSCCL fork of NCCL)
  kMscclpp = 3,          // MSCCL++
  kNvshmem = 4,          // NVSHMEM's on-stream collectives
  kDeepEp = 5,           // DeepEP's MoE dispatch/combine (deep_ep::, dpsk::ep::)
  kCustomAllReduce = 6,  // vLLM/SGLang/AITER, TensorRT-LLM/FlashInfer, PyTorch symmetric memory
  kCount = 7,
};

// Name in the report ("NCCL", "DeepEP", ...).
constexpr const char* comm_family_name(CommFamily f) {
  switch (f) {
    case CommFamily::kNccl:
      return "NCCL";
    case CommFamily::kMsccl:
      return "MSCCL";
    case CommFamily::kMscclpp:
      return "MSCCL++";
    case CommFamily::kNvshmem:
      return "NVSHMEM";
    case CommFamily::kDeepEp:
      return "DeepEP";
    case CommFamily::kCustomAllReduce:
      return "custom all-reduce";
    case CommFamily::kNone:
    case CommFamily::kCount:
      break;
  }
  return "none";
}

}  // namespace ncclwatch::model

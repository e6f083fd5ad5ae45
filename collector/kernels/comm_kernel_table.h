// Which kernels are communication, by name: one table of known communication kernel families
// (NCCL/RCCL, MSCCL, MSCCL++, NVSHMEM, DeepEP, custom all-reduce kernels), and the collective a
// kernel implements where its name says so. Every reader (ncclwatch traces, Kineto, Nsight
// Systems) classifies its kernels here, so all inputs count the same kernels as communication.
// Unknown names are compute. docs/inputs.md lists the table and how to add a row.
#pragma once

#include <string>
#include <string_view>

#include "model/comm_family.h"
#include "ncclwatch/format.h"

namespace ncclwatch::kernels {

struct CommKernel {
  model::CommFamily family = model::CommFamily::kNone;  // kNone: not communication
  // The collective the kernel implements when its name tells (ncclDevKernel_AllReduce_...,
  // DeepEP's dispatch/combine = all-to-all, a custom all-reduce); kUnknown otherwise (NCCL's
  // Generic and SendRecv kernels, MSCCL's, barriers).
  format::Func func = format::Func::kUnknown;
  bool comm() const { return family != model::CommFamily::kNone; }
};

// Classifies a kernel name as CUPTI, Kineto or Nsight Systems write it: demangled ("void
// deep_ep::intranode::dispatch<8, 768>(int4*, ...)"), plain ("ncclDevKernel_Generic_4(...)") or
// mangled ("_ZN7deep_ep10intranode8dispatch...", demangled here first).
CommKernel classify_kernel(std::string_view name);

// NCCL's own kernels, as HTA counts them (`^nccl.*Kernel`) plus ncclSymk*.
bool is_nccl_kernel_name(std::string_view name);

// The collective of an NCCL kernel name: ncclKernel_AllReduce_RING_LL_Sum_float,
// ncclDevKernel_AllGather_RING_LL, ncclAllReduceRingLLKernel_sum_f32 (NCCL <= 2.7),
// ncclDevKernel_SendRecv (kSend). kUnknown when the name does not say (Generic).
format::Func nccl_func_from_kernel_name(std::string_view name);

// The collective of an NCCL API name as NCCL's NVTX ranges name its calls ("ncclAllReduce",
// "ncclReduceScatter", "ncclSend"); kUnknown for anything else (ncclGroupEnd, ncclCommInitRank).
format::Func nccl_func_from_api_name(std::string_view name);

// "deep_ep::intranode::dispatch" from "void deep_ep::intranode::dispatch<8>(int4*, ...)": the
// qualified function name without return type, template arguments and parameters
// ("(anonymous namespace)::" dropped). Exposed for tests.
std::string qualified_function_name(std::string_view demangled);

}  // namespace ncclwatch::kernels

// What PyTorch's names mean in NCCL's terms: collective names, dtypes, NCCL kernel names, and
// the comm id a process group gets (equal on every rank of the group).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::kineto {

// "allreduce", "all_reduce", "_allgather_base", "reduce_scatter_tensor", "send", ... (the
// "Collective name" arg, or the suffix of a "nccl:<name>" annotation). kUnknown if not known.
format::Func func_from_collective_name(std::string_view name);

// From an NCCL kernel name: ncclKernel_AllReduce_RING_LL_Sum_float(...) -> kAllReduce,
// ncclDevKernel_SendRecv(...) -> kSend. kUnknown if the name says nothing
// (kernels::nccl_func_from_kernel_name).
format::Func func_from_kernel_name(std::string_view name);

// PyTorch scalar type name ("Float", "BFloat16", ...) -> ncclDataType_t value; 255 unknown.
uint8_t datatype_from_dtype(std::string_view dtype);

// An NCCL kernel: ncclKernel_*, ncclDevKernel_*, ncclSymk*, or any name HTA's communication
// pattern `^nccl.*Kernel` takes (kernels::is_nccl_kernel_name; the other communication kernel
// families are in kernels::classify_kernel).
bool is_nccl_kernel_name(std::string_view name);

// "[0, 1, 2]" (or a JSON array) -> {0, 1, 2}. Non-numbers are skipped.
std::vector<int32_t> parse_rank_list(std::string_view text);

// The comm id of a process group: FNV-1a of its name and ranks. Every rank of the group sees
// the same name and rank list, so every rank computes the same id.
uint64_t comm_id_for_group(std::string_view pg_name, const std::vector<int32_t>& ranks);

}  // namespace ncclwatch::kineto

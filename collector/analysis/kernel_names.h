// Kernel names as a person compares them across runs: the demangled signature without its
// parameter list, return type, template arguments, anonymous namespaces and addresses, so that
// "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>
// (int, ...)" of one build and the same kernel with other template arguments of the next read
// as one name. A generic launcher template (cutlass::Kernel2<Op>, cutlass::device_kernel<Op>)
// keeps its operator, the only part that says which kernel it is. And the NCCL algorithm and
// protocol a kernel name carries (ncclDevKernel_AllReduce_Sum_f32_RING_LL, older
// ncclKernel_AllReduce_RING_LL_Sum_float), for the environment a run recorded.
#pragma once

#include <string>
#include <string_view>

namespace ncclwatch::analysis {

std::string normalize_kernel_name(std::string_view name);

// "RING/LL", "TREE/SIMPLE", "NVLS/SIMPLE", ... from an NCCL kernel name; "" when the name
// carries no algorithm (ncclDevKernel_Generic, SendRecv kernels, non-NCCL names).
std::string nccl_algorithm_of(std::string_view kernel_name);

}  // namespace ncclwatch::analysis

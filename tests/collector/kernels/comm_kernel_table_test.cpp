// The table on kernel names as CUPTI, Kineto and Nsight Systems write them (taken from public
// traces and the libraries' sources), and on compute kernels that must stay compute.
#include "kernels/comm_kernel_table.h"

#include <gtest/gtest.h>

namespace ncclwatch::kernels {
namespace {

using format::Func;
using model::CommFamily;

void expect(std::string_view name, CommFamily family, Func func) {
  const CommKernel k = classify_kernel(name);
  EXPECT_EQ(k.family, family) << name;
  EXPECT_EQ(k.func, func) << name;
}

TEST(CommKernelTable, NcclKernelsOfEveryGeneration) {
  expect("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         CommFamily::kNccl, Func::kAllReduce);
  expect("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", CommFamily::kNccl,
         Func::kAllGather);
  expect("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         CommFamily::kNccl, Func::kReduceScatter);
  expect("ncclSymkDevKernel_AllGather_LL", CommFamily::kNccl, Func::kAllGather);
  expect("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", CommFamily::kNccl,
         Func::kSend);
  // NCCL <= 2.7 (PyTorch 1.8 era): nccl<Op><Algo><Proto>Kernel_<redop>_<type>.
  expect("ncclAllReduceRingLLKernel_sum_f32(ncclColl)", CommFamily::kNccl, Func::kAllReduce);
  expect("ncclReduceScatterRingLL128Kernel_sum_f16(ncclColl)", CommFamily::kNccl,
         Func::kReduceScatter);
  expect("ncclBroadcastRingLLKernel_copy_i8(ncclColl)", CommFamily::kNccl, Func::kBroadcast);
  // Generic kernels do not say which collective (RCCL uses NCCL's names too).
  expect("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", CommFamily::kNccl,
         Func::kUnknown);
  expect("ncclDevKernel_Generic_1", CommFamily::kNccl, Func::kUnknown);
}

TEST(CommKernelTable, OtherFamilies) {
  expect("mscclKernel_Sum_hip_bfloat16_Simple_false(ncclDevComm*, mscclAlgo*, mscclWork*)",
         CommFamily::kMsccl, Func::kUnknown);
  expect(
      "void mscclpp::executionKernel<__half, mscclpp::LL16Packet>(int, __half*, __half*, "
      "__half*, unsigned long, mscclpp::DeviceExecutionPlan*, unsigned int)",
      CommFamily::kMscclpp, Func::kUnknown);
  expect("void alltoall_on_stream_kernel<float>(int, float*, float const*, unsigned long)",
         CommFamily::kNvshmem, Func::kAlltoAll);
  expect("void barrier_on_stream_kernel_threadgroup<(threadgroup_t)2>(int, int)",
         CommFamily::kNvshmem, Func::kUnknown);
  expect(
      "void deep_ep::intranode::dispatch<(int)2, (int)768, (int)8192>(int4 *, float *, float "
      "*, int *)",
      CommFamily::kDeepEp, Func::kAlltoAll);
  expect(
      "void deep_ep::internode_ll::combine<(bool)0, (int)6144, (int)11, (int)4>(void *, void "
      "*, int *)",
      CommFamily::kDeepEp, Func::kAlltoAll);
  expect("void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*, float*, int*)",
         CommFamily::kDeepEp, Func::kAlltoAll);
  expect("void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int const*, int*, int)",
         CommFamily::kDeepEp, Func::kUnknown);
  expect(
      "void deep_ep::intranode::cached_notify_combine<8>(void**, int*, int, int, int, int**, "
      "int)",
      CommFamily::kDeepEp, Func::kUnknown);
  // Mangled (as a CUPTI name can be): demangled first.
  expect("_ZN7deep_ep9intranode8dispatchILi8EEEvPi", CommFamily::kDeepEp, Func::kAlltoAll);
  expect(
      "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, "
      "vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
      CommFamily::kCustomAllReduce, Func::kAllReduce);
  expect("void sglang::cross_device_reduce_2stage<__half, 8>(sglang::RankData*)",
         CommFamily::kCustomAllReduce, Func::kAllReduce);
  expect(
      "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8, true, false>("
      "tensorrt_llm::kernels::AllReduceParams)",
      CommFamily::kCustomAllReduce, Func::kAllReduce);
  expect(
      "void flashinfer::trtllm_mnnvl_allreduce::twoshotAllreduceKernel<(unsigned char)2, "
      "__nv_bfloat16, true>(flashinfer::trtllm_mnnvl_allreduce::AllReduceFusionParams)",
      CommFamily::kCustomAllReduce, Func::kAllReduce);
  expect(
      "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<("
      "flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 8, false, "
      "false>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
      CommFamily::kCustomAllReduce, Func::kAllReduce);
  expect(
      "void (anonymous namespace)::two_shot_all_reduce_kernel<float, 16, 8, false, false>("
      "float**, float*, unsigned long, unsigned long, unsigned int**, unsigned long)",
      CommFamily::kCustomAllReduce, Func::kAllReduce);
  expect("void (anonymous namespace)::multimem_all_gather_kernel<16>(char*, char*, unsigned long)",
         CommFamily::kCustomAllReduce, Func::kAllGather);
  expect("void c10d::intra_node_comm::hybridCubeMeshAllReduceKernel<at::BFloat16>(...)",
         CommFamily::kCustomAllReduce, Func::kAllReduce);
}

TEST(CommKernelTable, ComputeStaysCompute) {
  for (const char* name : {
           "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
           "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
           "at::detail::Array<char*, 3>)",
           "ampere_sgemm_128x64_nn",
           "nvjet_tst_192x192_64x4_1x2_h_bz_coopB_TNN",
           // DeepEP's layout is a local computation; DeepSeek builds put CUB scans in cdpsk::ep.
           "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*)",
           "void cdpsk::ep::CUB_200200_900_NS::DeviceScanKernel<int>(int*)",
           // HTA counts only names that start with "nccl" as NCCL's.
           "void at::native::ncclKernel_lookalike()",
           "nccl_helper",
           "Memcpy DtoD (Device -> Device)",
           "",
       }) {
    EXPECT_FALSE(classify_kernel(name).comm()) << name;
  }
}

TEST(CommKernelTable, QualifiedFunctionName) {
  EXPECT_EQ(qualified_function_name("void deep_ep::intranode::dispatch<8, 768>(int4*, float*)"),
            "deep_ep::intranode::dispatch");
  EXPECT_EQ(qualified_function_name("void (anonymous namespace)::one_shot<float, 16>(float**)"),
            "one_shot");
  EXPECT_EQ(qualified_function_name("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_Generic_4");
  EXPECT_EQ(qualified_function_name("void f<(Pattern)1, 8>(Params<(Pattern)1>)"), "f");
  EXPECT_EQ(qualified_function_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  // Unbalanced brackets (a damaged name) end without a crash.
  EXPECT_EQ(qualified_function_name("void a<<<(("), "a");
  EXPECT_EQ(qualified_function_name(">>>x"), "x");
}

}  // namespace
}  // namespace ncclwatch::kernels

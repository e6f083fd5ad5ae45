// Kernel names as the diff compares them (kernel_names.h) and the kernel table (kernel_table.h)
// on the simulator: time per step, spread, NCCL algorithm shares.
#include <gtest/gtest.h>

#include "analysis/analyze.h"
#include "analysis/kernel_names.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

TEST(KernelNames, SignatureReducedToTheKernelsName) {
  EXPECT_EQ(
      normalize_kernel_name(
          "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
          "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
          "at::detail::Array<char*, 3>)"),
      "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(
      normalize_kernel_name("void at::native::(anonymous namespace)::distribution_elementwise_"
                            "grid_stride_kernel<float, 4>(long, at::PhiloxCudaState)"),
      "at::native::distribution_elementwise_grid_stride_kernel");
  EXPECT_EQ(normalize_kernel_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(normalize_kernel_name(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(normalize_kernel_name("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(normalize_kernel_name("  fwd_kernel  "), "fwd_kernel");
}

TEST(KernelNames, GenericLaunchersKeepTheirOperator) {
  EXPECT_EQ(
      normalize_kernel_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_"
                            "tn_align4>(cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4::"
                            "Params)"),
      "cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4>");
  EXPECT_EQ(normalize_kernel_name("void cutlass::device_kernel<flash::FlashAttnFwd<Ktraits, true>>("
                                  "flash::Params)"),
            "cutlass::device_kernel<flash::FlashAttnFwd>");
}

TEST(KernelNames, AddressesAndTemplateArgumentsOfOtherBuildsReadAlike) {
  EXPECT_EQ(normalize_kernel_name("void foo<0x7f3a12>(int)"),
            normalize_kernel_name("void foo<0x55aa01>(int)"));
  EXPECT_EQ(normalize_kernel_name("kernel_at_0x7f3a12bc"), "kernel_at_");
  EXPECT_EQ(normalize_kernel_name("void reduce<float, 256>(float*)"),
            normalize_kernel_name("void reduce<__half, 128>(__half*)"));
}

TEST(KernelNames, HostileNamesStayBounded) {
  EXPECT_LE(normalize_kernel_name(std::string(100000, 'x')).size(), 200u);
  EXPECT_EQ(normalize_kernel_name(std::string(5000, '<')),
            normalize_kernel_name(std::string(5000, '<')));
  EXPECT_FALSE(normalize_kernel_name("(((").empty());
  EXPECT_NO_THROW(normalize_kernel_name(">>>>(<<<)"));
}

TEST(KernelNames, NcclAlgorithmAndProtocol) {
  EXPECT_EQ(nccl_algorithm_of(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "RING/LL");
  EXPECT_EQ(nccl_algorithm_of("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), "RING/LL");
  EXPECT_EQ(nccl_algorithm_of("ncclDevKernel_AllReduce_Sum_bf16_TREE_LL128"), "TREE/LL128");
  EXPECT_EQ(nccl_algorithm_of("ncclDevKernel_AllReduce_Sum_f16_NVLS_TREE_SIMPLE"),
            "NVLS_TREE/SIMPLE");
  EXPECT_EQ(nccl_algorithm_of("ncclDevKernel_AllGather_COLLNET_DIRECT_SIMPLE"),
            "COLLNET_DIRECT/SIMPLE");
  EXPECT_EQ(nccl_algorithm_of("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), "");
  EXPECT_EQ(nccl_algorithm_of("ncclDevKernel_Generic"), "");
  EXPECT_EQ(nccl_algorithm_of("RING_LL_gemm"), "");  // not NCCL's
}

TEST(KernelTable, TimePerStepSpreadAndAlgorithms) {
  auto p = testing::sim_params(4, 2);
  p.jitter_ns = 100'000;
  const auto sim = testing::simulate(p);
  model::Report r;
  analyze(sim.job, sim.match, sim.clocks, r);
  const auto& kernels = r.json.at("kernels");
  ASSERT_EQ(kernels.size(), 2u) << kernels.dump();
  // compute_kernel: forward 5 + backward 4 x 2 + optimizer 1 = 14 ms per step, plus jitter.
  EXPECT_EQ(kernels[0]["name"], "compute_kernel");
  EXPECT_FALSE(kernels[0]["nccl"].get<bool>());
  EXPECT_NEAR(kernels[0]["us_per_step"].get<double>(), 14'000 + 6 * 50, 150) << kernels.dump();
  EXPECT_NEAR(kernels[0]["calls_per_step"].get<double>(), 6, 1e-9);
  EXPECT_GT(kernels[0]["spread_us"].get<double>(), 20);   // 6 kernels of U(0, 100 µs) jitter:
  EXPECT_LT(kernels[0]["spread_us"].get<double>(), 200);  // sd ~71 µs per step
  EXPECT_EQ(kernels[0]["ranks"], 4);
  EXPECT_EQ(kernels[1]["name"], "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_TRUE(kernels[1]["nccl"].get<bool>());
  const auto& ka = r.json.at("kernels_analysis");
  EXPECT_EQ(ka["names"], 2);
  EXPECT_EQ(ka["listed"], 2);
  EXPECT_NEAR(ka["nccl_algorithms"]["RING/LL"].get<double>(), 100, 1e-9);
}

}  // namespace
}  // namespace ncclwatch::analysis

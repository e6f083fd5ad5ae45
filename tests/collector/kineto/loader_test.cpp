// The loader on traces whose answers are known: kernel fields, record_param_comms linked to its
// NCCL kernel (new style by External id, old style by correlation), comm ids and sequence
// numbers that agree across ranks, plain and gzip, and whole jobs from directories.
#include "kineto/kineto_loader.h"

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/overlap.h"
#include "kineto/collective_names.h"
#include "synthetic_trace.h"
#include "trace_files.h"

namespace ncclwatch::kineto {
namespace {

using testing::SyntheticTraceSpec;
using testing::TempDir;
using testing::trace_doc;
using testing::write_file;

// Compute [0,100) and [150,250) µs on stream 7, a memcpy [100,150) (neither comm nor compute),
// an NCCL all-reduce [50,200) on stream 20: overlap = (50 + 50) / 150 = 2/3.
std::vector<std::string> known_events() {
  return {
      R"J({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 9, "tid": 9, "ts": 1000000000000000, "dur": 400, "args": {"External id": 1}})J",
      R"J({"ph": "X", "cat": "kernel", "name": "void gemm()", "pid": 1, "tid": 7, "ts": 1000000000000000, "dur": 100, "args": {"device": 1, "stream": 7, "correlation": 11, "External id": 2}})J",
      R"J({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 1, "tid": 7, "ts": 1000000000000100, "dur": 50, "args": {"device": 1, "stream": 7, "correlation": 12, "bytes": 4096}})J",
      R"J({"ph": "X", "cat": "kernel", "name": "void relu()", "pid": 1, "tid": 7, "ts": 1000000000000150, "dur": 100, "args": {"device": 1, "stream": 7, "correlation": 13, "External id": 3}})J",
      R"J({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 1000000000000040, "dur": 8.5, "args": {"External id": 5, "Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1000, "Out msg nelems": 1000, "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]"}})J",
      R"J({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 9, "tid": 9, "ts": 1000000000000045, "dur": 2, "args": {"External id": 5, "correlation": 14}})J",
      R"J({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 1, "tid": 20, "ts": 1000000000000050, "dur": 150, "args": {"device": 1, "stream": 20, "correlation": 14, "External id": 5}})J",
      R"J({"ph": "s", "id": 14, "pid": 9, "tid": 9, "ts": 1000000000000045, "cat": "ac2g", "name": "ac2g"})J",
      R"J({"ph": "M", "name": "process_name", "pid": 9, "tid": 0, "args": {"name": "python"}})J",
  };
}
const char* kInfo = R"({"backend": "nccl", "rank": 1, "world_size": 2, "nccl_version": "2.21.5"})";

TEST(KinetoLoader, ReadsKernelsCallsAndRangesWithKnownOverlap) {
  TempDir tmp;
  write_file(tmp.path("r1.json"), trace_doc(known_events(), kInfo));
  std::vector<model::InputProblem> problems;
  auto t = load_rank(tmp.path("r1.json"), problems);
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(t->info.rank, 1);
  EXPECT_EQ(t->info.world_size, 2);
  EXPECT_EQ(t->info.device, 1);
  EXPECT_EQ(t->info.pid, 9);
  EXPECT_EQ(t->info.nccl_version, "2.21.5");
  EXPECT_EQ(t->info.gpu_name, "");  // no deviceProperties
  EXPECT_EQ(t->info.timing, model::TimingSource::kKineto);
  EXPECT_TRUE(t->info.complete);
  ASSERT_EQ(t->kernels.size(), 4u);
  const auto& nccl = t->kernels[1];  // sorted by start: gemm 0, nccl 50, memcpy 100, relu 150
  EXPECT_TRUE(nccl.nccl);
  EXPECT_EQ(nccl.stream, 20u);
  EXPECT_EQ(nccl.start_ns, 1000000000000050000);
  EXPECT_EQ(nccl.end_ns, 1000000000000200000);
  EXPECT_EQ(t->kernels[2].kind, format::ActivityKind::kMemcpy);
  EXPECT_EQ(t->kernels[2].bytes, 4096u);
  EXPECT_FALSE(t->kernels[0].nccl);

  ASSERT_EQ(t->calls.size(), 1u);
  const model::CallEvent& c = t->calls[0];
  EXPECT_EQ(c.func, format::Func::kAllReduce);
  EXPECT_EQ(c.count, 1000u);
  EXPECT_EQ(c.bytes(), 4000u);
  EXPECT_EQ(c.datatype, 7);  // ncclFloat32
  EXPECT_EQ(c.seq, 0u);
  EXPECT_EQ(c.enter_ns, 1000000000000040000);
  EXPECT_EQ(c.exit_ns, 1000000000000048500);
  EXPECT_EQ(c.kernel, 1);
  EXPECT_EQ(nccl.call, 0);
  EXPECT_EQ(c.gpu_start_ns, nccl.start_ns);
  EXPECT_EQ(c.gpu_end_ns, nccl.end_ns);
  ASSERT_EQ(t->comms.size(), 1u);
  EXPECT_EQ(t->comms[0].id, c.comm_id);
  EXPECT_EQ(t->comms[0].id, comm_id_for_group("0", {0, 1}));
  EXPECT_EQ(t->comms[0].name, "0");
  EXPECT_EQ(t->comms[0].nranks, 2);
  EXPECT_EQ(t->comms[0].rank, 1);

  ASSERT_EQ(t->ranges.size(), 1u);
  EXPECT_EQ(t->name_of(t->ranges[0].name), "ProfilerStep#7");
  ASSERT_EQ(t->launches.size(), 1u);  // only launches of GPU work in the trace are kept
  EXPECT_EQ(t->launches[0].correlation, 14u);

  EXPECT_NEAR(analysis::overlap_fraction(*t), 2.0 / 3.0, 1e-12);
}

TEST(KinetoLoader, GpuNameOfTheRanksDevice) {
  TempDir tmp;
  std::string doc = testing::synthetic_trace({.rank = 1});  // deviceProperties: id 1, H100
  const std::string props = R"("deviceProperties": [{"id": 0, "name": "NVIDIA A100"}, {)";
  doc.replace(doc.find(R"("deviceProperties": [{)"), 22, props);
  write_file(tmp.path("r1.json"), doc);
  std::vector<model::InputProblem> problems;
  auto t = load_rank(tmp.path("r1.json"), problems);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->info.device, 1);
  EXPECT_EQ(t->info.gpu_name, "NVIDIA H100");
  EXPECT_EQ(t->info.nccl_version, "2.21.5");
}

TEST(KinetoLoader, GzipAndPlainGiveTheSameTrace) {
  TempDir tmp;
  const std::string doc = trace_doc(known_events(), kInfo);
  write_file(tmp.path("a.json"), doc);
  write_file(tmp.path("b.json.gz"), testing::gzip(doc));
  // A misnamed file is sniffed by its bytes; two gzip members read as one stream (cat a.gz b.gz).
  write_file(tmp.path("c.json"),
             testing::gzip(doc.substr(0, 100)) + testing::gzip(doc.substr(100)));
  std::vector<model::InputProblem> problems;
  auto a = load_rank(tmp.path("a.json"), problems);
  auto b = load_rank(tmp.path("b.json.gz"), problems);
  auto c = load_rank(tmp.path("c.json"), problems);
  ASSERT_TRUE(a && b && c);
  EXPECT_TRUE(problems.empty());
  for (const auto* t : {&*b, &*c}) {
    ASSERT_EQ(t->kernels.size(), a->kernels.size());
    for (std::size_t i = 0; i < a->kernels.size(); ++i) {
      EXPECT_EQ(t->kernels[i].start_ns, a->kernels[i].start_ns);
      EXPECT_EQ(t->kernels[i].end_ns, a->kernels[i].end_ns);
    }
    EXPECT_EQ(t->calls.size(), a->calls.size());
  }
}

TEST(KinetoLoader, OldTracesLinkByCorrelationAndNameByAnnotation) {
  // PyTorch < 2.1: record_param_comms has no args, the kernel's External id is its correlation,
  // a "nccl:all_reduce" annotation names the collective; a second argument-less
  // record_param_comms follows each collective and must not become a call.
  SyntheticTraceSpec spec;
  spec.pg_name = "";
  spec.fractional_ts = false;
  TempDir tmp;
  write_file(tmp.path("old.json"), testing::synthetic_trace(spec));
  std::vector<model::InputProblem> problems;
  auto t = load_rank(tmp.path("old.json"), problems);
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->calls.size(), static_cast<std::size_t>(spec.steps * spec.allreduces_per_step));
  for (std::size_t i = 0; i < t->calls.size(); ++i) {
    EXPECT_EQ(t->calls[i].func, format::Func::kAllReduce);
    EXPECT_EQ(t->calls[i].seq, i);
    ASSERT_GE(t->calls[i].kernel, 0);
    EXPECT_TRUE(t->kernels[static_cast<std::size_t>(t->calls[i].kernel)].nccl);
  }
  EXPECT_NEAR(100.0 * analysis::overlap_fraction(*t), testing::synthetic_overlap_pct(spec), 1e-9);
}

TEST(KinetoLoader, PyTorchSeqWinsOverOrderOfAppearance) {
  std::vector<std::string> ev = known_events();
  std::string& rpc = ev[4];
  rpc.insert(rpc.find("\"External id\""), "\"Seq\": 41, ");
  TempDir tmp;
  write_file(tmp.path("s.json"), trace_doc(ev, kInfo));
  std::vector<model::InputProblem> problems;
  auto t = load_rank(tmp.path("s.json"), problems);
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->calls.size(), 1u);
  EXPECT_EQ(t->calls[0].seq, 41u);
}

TEST(KinetoLoader, JobFromDirectoryAgreesAcrossRanks) {
  TempDir tmp;
  SyntheticTraceSpec spec;
  spec.world_size = 4;
  for (int r = 3; r >= 0; --r) {
    spec.rank = r;
    spec.rank_delay_us = r == 2 ? 30 : 0;  // rank 2's all-reduces start late: less overlap
    const std::string doc = testing::synthetic_trace(spec);
    write_file(tmp.path("rank" + std::to_string(r) + (r % 2 ? ".json.gz" : ".json")),
               r % 2 ? testing::gzip(doc) : doc);
  }
  write_file(tmp.path("notes.txt"), "not a trace, not picked up");
  model::JobTrace job = load_job({tmp.dir().string()});
  EXPECT_TRUE(job.problems.empty());
  ASSERT_EQ(job.ranks.size(), 4u);
  const std::size_t per_rank = static_cast<std::size_t>(spec.steps * spec.allreduces_per_step);
  for (int r = 0; r < 4; ++r) {
    const model::RankTrace& t = job.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(t.info.rank, r);
    EXPECT_EQ(t.info.world_size, 4);
    ASSERT_EQ(t.calls.size(), per_rank);
    for (std::size_t i = 0; i < per_rank; ++i) {
      EXPECT_EQ(t.calls[i].comm_id, job.ranks[0].calls[i].comm_id);  // same id on every rank
      EXPECT_EQ(t.calls[i].seq, i);
      EXPECT_EQ(t.calls[i].bytes(), job.ranks[0].calls[i].bytes());
    }
    ASSERT_EQ(t.comms.size(), 1u);
    EXPECT_EQ(t.comms[0].rank, r);
    SyntheticTraceSpec s = spec;
    s.rank_delay_us = r == 2 ? 30 : 0;
    EXPECT_NEAR(100.0 * analysis::overlap_fraction(t), testing::synthetic_overlap_pct(s), 1e-9)
        << r;
  }
  EXPECT_LT(testing::synthetic_overlap_pct({.rank_delay_us = 30}),
            testing::synthetic_overlap_pct({}));
}

TEST(KinetoLoader, SecondFileOfTheSameRankIsSkippedWithAProblem) {
  TempDir tmp;
  const std::string doc = trace_doc(known_events(), kInfo);
  write_file(tmp.path("a.json"), doc);
  write_file(tmp.path("b.json"), doc);
  model::JobTrace job = load_job({tmp.path("a.json"), tmp.path("b.json")});
  EXPECT_EQ(job.ranks.size(), 1u);
  ASSERT_EQ(job.problems.size(), 1u);  // once
  EXPECT_EQ(job.problems[0].source, tmp.path("b.json"));
  EXPECT_NE(job.problems[0].message.find("rank 1 already read from"), std::string::npos);
}

TEST(CollectiveNames, MapPyTorchNamesToNccl) {
  using format::Func;
  EXPECT_EQ(func_from_collective_name("allreduce"), Func::kAllReduce);
  EXPECT_EQ(func_from_collective_name("nccl:all_reduce"), Func::kAllReduce);
  EXPECT_EQ(func_from_collective_name("_allgather_base"), Func::kAllGather);
  EXPECT_EQ(func_from_collective_name("all_gather_into_tensor_coalesced"), Func::kAllGather);
  EXPECT_EQ(func_from_collective_name("reduce_scatter_tensor"), Func::kReduceScatter);
  EXPECT_EQ(func_from_collective_name("all_to_all"), Func::kAlltoAll);
  EXPECT_EQ(func_from_collective_name("send"), Func::kSend);
  EXPECT_EQ(func_from_collective_name("recv"), Func::kRecv);
  EXPECT_EQ(func_from_collective_name("wait"), Func::kUnknown);
  EXPECT_EQ(func_from_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            Func::kAllReduce);
  EXPECT_EQ(func_from_kernel_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(x)"),
            Func::kReduceScatter);
  EXPECT_EQ(func_from_kernel_name("ncclDevKernel_Broadcast_RING_LL(x)"), Func::kBroadcast);
  EXPECT_EQ(datatype_from_dtype("BFloat16"), 9);
  EXPECT_EQ(datatype_from_dtype("Long"), 4);
  EXPECT_EQ(datatype_from_dtype("Complex"), 255);
  EXPECT_TRUE(is_nccl_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"));
  EXPECT_TRUE(is_nccl_kernel_name("ncclDevKernel_AllGather_RING_LL(x)"));
  EXPECT_TRUE(is_nccl_kernel_name("ncclSymkDevKernel_AllReduce"));
  EXPECT_FALSE(is_nccl_kernel_name("void at::native::ncclKernel_lookalike()"));  // HTA: ^nccl
  EXPECT_FALSE(is_nccl_kernel_name("nccl_helper"));
  EXPECT_EQ(parse_rank_list("[0, 12, 3]"), (std::vector<int32_t>{0, 12, 3}));
  EXPECT_EQ(parse_rank_list("[]"), std::vector<int32_t>{});
  EXPECT_NE(comm_id_for_group("0", {0, 1}), comm_id_for_group("1", {0, 1}));
  EXPECT_NE(comm_id_for_group("0", {0, 1}), comm_id_for_group("0", {0, 2}));
}

}  // namespace
}  // namespace ncclwatch::kineto

// ncclwatch's overlap % on the real traces in ../shared/traces/kineto against the figures
// HolisticTraceAnalysis printed for them (scripts/hta_compare.py; table in docs/kineto.md),
// over the same kernels, within 0.1 percentage point. The overlap is the analysis library's.
//
// HTA settings: TraceAnalysis(trace_files={0: file}, include_last_profiler_step=...), then
// get_comm_comp_overlap(visualize=False)["comp_comm_overlap_pctg"] (2 decimals). "us" is HTA's
// default (sub-µs timestamps rounded to whole µs), "ns" is with HTA_DISABLE_NS_ROUNDING=1.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "analysis/overlap.h"
#include "export/chrome_trace.h"
#include "kineto/hta_kernel_filter.h"
#include "kineto/kineto_loader.h"
#include "pipeline/pipeline.h"
#include "synthetic_trace.h"
#include "trace_files.h"

namespace ncclwatch::kineto {
namespace {

struct HtaFigures {
  const char* file;  // relative to the shared traces folder
  int rank;
  double drop_last_us;  // HTA's default
  double keep_last_us;
  double drop_last_ns;
  double keep_last_ns;
};

// HolisticTraceAnalysis 0.5.0 (PyPI), pandas 3.1.1, run 2026-12-02.
constexpr HtaFigures kHta[] = {
    {"df_index_resolver/df_index_resolver.json.gz", 1, 0.00, 0.00, 0.00, 0.00},
    {"nccl_parser_config/nccl_data.json.gz", 0, 14.31, 15.14, 14.76, 15.61},
    {"negative_queue_length_values_check/rank0.json.gz", 0, 1.37, 1.47, 1.37, 1.47},
    {"trace_diff/control/control.json.gz", 3, 47.03, 46.24, 47.03, 46.24},
    {"trace_diff/test/test.json.gz", 1, 68.80, 69.07, 68.80, 69.07},
    {"trace_filter/sampled_rank-0.json.gz", 0, 11.81, 14.95, 11.81, 14.95},
    {"trace_filter/sampled_rank-1.json.gz", 1, 20.05, 19.93, 20.05, 19.93},
};

constexpr double kTolerancePp = 0.1;

std::filesystem::path shared_traces() {
  return NCCLWATCH_SHARED_KINETO_TRACES;
}

double pct(const model::RankTrace& t, HtaSelection how) {
  return 100.0 * analysis::overlap_fraction(with_hta_kernel_selection(t, how));
}

class HtaAgreement : public ::testing::TestWithParam<HtaFigures> {};

TEST_P(HtaAgreement, OverlapMatchesHtaOnTheSameKernels) {
  const HtaFigures& f = GetParam();
  const auto path = shared_traces() / f.file;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no shared traces at " << path;
  std::vector<model::InputProblem> problems;
  auto t = load_rank(path.string(), problems);
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(problems.empty()) << problems.front().message;
  EXPECT_EQ(t->info.rank, f.rank);
  EXPECT_NEAR(pct(*t, {.include_last_profiler_step = false, .round_to_us = true}), f.drop_last_us,
              kTolerancePp);
  EXPECT_NEAR(pct(*t, {.include_last_profiler_step = true, .round_to_us = true}), f.keep_last_us,
              kTolerancePp);
  EXPECT_NEAR(pct(*t, {.include_last_profiler_step = false, .round_to_us = false}), f.drop_last_ns,
              kTolerancePp);
  EXPECT_NEAR(pct(*t, {.include_last_profiler_step = true, .round_to_us = false}), f.keep_last_ns,
              kTolerancePp);
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, HtaAgreement, ::testing::ValuesIn(kHta),
                         [](const ::testing::TestParamInfo<HtaFigures>& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('/'));
                           return name + "_" + std::to_string(info.index);
                         });

// Every NCCL kernel of the real traces that sits inside a record_param_comms op is tied to it,
// and every call kept has a known collective: the counts below were read off the traces.
TEST(RealTraces, CollectivesAreLinkedToTheirKernels) {
  struct Expect {
    const char* file;
    std::size_t nccl_kernels;
    std::size_t calls;
  };
  const Expect expect[] = {
      {"nccl_parser_config/nccl_data.json.gz", 21, 21},
      {"df_index_resolver/df_index_resolver.json.gz", 2020, 2020},
      {"trace_diff/control/control.json.gz", 60, 60},
  };
  for (const auto& e : expect) {
    const auto path = shared_traces() / e.file;
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "no shared traces at " << path;
    std::vector<model::InputProblem> problems;
    auto t = load_rank(path.string(), problems);
    ASSERT_TRUE(t.has_value());
    std::size_t nccl = 0, linked = 0;
    for (const auto& k : t->kernels) {
      nccl += k.nccl;
      linked += k.nccl && k.call >= 0;
    }
    EXPECT_EQ(nccl, e.nccl_kernels) << e.file;
    EXPECT_EQ(linked, e.nccl_kernels) << e.file;
    EXPECT_EQ(t->calls.size(), e.calls) << e.file;
    for (const auto& c : t->calls) {
      EXPECT_NE(c.func, format::Func::kUnknown) << e.file;
      EXPECT_GE(c.kernel, 0) << e.file;
    }
  }
}

// HTA's own test of nccl_parser_config: the longest NCCL kernel is an all-reduce of 2049000
// elements in process group "0" (default_pg) of ranks [0, 1].
TEST(RealTraces, NcclDataLongestCollectiveMatchesHtasTest) {
  const auto path = shared_traces() / "nccl_parser_config/nccl_data.json.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no shared traces at " << path;
  std::vector<model::InputProblem> problems;
  auto t = load_rank(path.string(), problems);
  ASSERT_TRUE(t.has_value());
  const model::CallEvent* longest = nullptr;
  for (const auto& c : t->calls)
    if (longest == nullptr ||
        c.gpu_end_ns - c.gpu_start_ns > longest->gpu_end_ns - longest->gpu_start_ns)
      longest = &c;
  ASSERT_NE(longest, nullptr);
  EXPECT_EQ(longest->func, format::Func::kAllReduce);
  EXPECT_EQ(longest->count, 2049000u);
  EXPECT_EQ(longest->bytes(), 2049000u * 4);
  ASSERT_EQ(t->comms.size(), 1u);
  EXPECT_EQ(t->comms[0].name, "0");
  EXPECT_EQ(t->comms[0].nranks, 2);
  EXPECT_EQ(t->info.world_size, 2);
}

// The --trace export of a Kineto trace whose GPU runs behind the host (GPU-side ProfilerStep#N
// after the CPU range of the same name, the last one after the last CPU step; the all-reduces
// of the two steps before the trace still running at its start, their launches not in it): the
// export has the 3 CPU steps, and HTA's kernel selection on the export (kernels launched up to
// the end of the last ProfilerStep, ns timestamps, as scripts/hta_trace_check.py runs HTA) gives
// the export's own ncclwatch_overlap_pct within 0.1 pp, which is the trace's known overlap. (The
// `hta_kineto_lag_check` test runs HTA itself on such an export.)
TEST(ExportOfKinetoTrace, GpuBehindTheHostKeepsTheStepsAndHtasOverlap) {
  for (int64_t lag_us : {300, 600}) {
    testing::SyntheticTraceSpec spec;
    spec.steps = 3;
    spec.gpu_step_annotations = true;
    spec.gpu_lag_us = lag_us;
    spec.unlaunched_steps = 2;
    testing::TempDir tmp;
    testing::write_file(tmp.path("rank0.json"), testing::synthetic_trace(spec));
    model::JobTrace job = load_job({tmp.path("rank0.json")});
    ASSERT_EQ(job.ranks.size(), 1u);
    pipeline::PipelineOptions options;
    options.link_gpu = false;
    options.threads = 1;
    const pipeline::PipelineResult result = pipeline::run_pipeline(job, options);
    exporter::ChromeTraceStats stats;
    std::string error;
    ASSERT_TRUE(exporter::ChromeTraceWriter::write_file(tmp.path("export.json"), job, result.match,
                                                        result.clock, {}, stats, error))
        << error;
    EXPECT_EQ(stats.steps, 3u) << "lag " << lag_us << " us";

    const auto doc = nlohmann::json::parse(testing::read_file(tmp.path("export.json")));
    double ours = NAN;
    for (const auto& e : doc["traceEvents"])
      if (e.value("name", "") == "process_labels") ours = e["args"]["ncclwatch_overlap_pct"];
    EXPECT_NEAR(ours, testing::synthetic_overlap_pct(spec), 0.01) << "lag " << lag_us << " us";
    std::vector<model::InputProblem> problems;
    auto exported = load_rank(tmp.path("export.json"), problems);
    ASSERT_TRUE(exported.has_value());
    const double hta = pct(*exported, {.include_last_profiler_step = true, .round_to_us = false});
    EXPECT_NEAR(hta, ours, kTolerancePp) << "lag " << lag_us << " us";
  }
}

}  // namespace
}  // namespace ncclwatch::kineto

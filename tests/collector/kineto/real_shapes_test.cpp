// Shapes real traces have that the plain synthetic ones do not: ProfilerStep#N both as a CPU range
// and as a GPU-side annotation (ROCm/MI300 and newer CUDA Kineto), a profile of one step, bad
// times (negative dur, NaN/Infinity ts, timestamps near the int64 limit), and bounds on what a
// hostile file may make the reader inflate or hold (a gzip bomb, one gigantic event).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/step_plan.h"
#include "kineto/kineto_loader.h"
#include "synthetic_trace.h"
#include "trace_files.h"

namespace ncclwatch::kineto {
namespace {

using testing::TempDir;
using testing::write_file;

struct Loaded {
  std::optional<model::RankTrace> trace;
  std::vector<model::InputProblem> problems;
};

Loaded load_text(const std::string& bytes, const std::string& name = "t.json",
                 const LoadLimits& limits = {}) {
  TempDir tmp;
  write_file(tmp.path(name), bytes);
  Loaded l;
  l.trace = load_rank(tmp.path(name), l.problems, limits);
  return l;
}

std::string problems_text(const Loaded& l) {
  std::string s;
  for (const auto& p : l.problems) s += p.message + "\n";
  return s;
}

analysis::StepPlan steps_of(const model::RankTrace& t) {
  int64_t begin = INT64_MAX, end = INT64_MIN;
  for (const auto& k : t.kernels) {
    begin = std::min(begin, k.start_ns);
    end = std::max(end, k.end_ns);
  }
  return analysis::StepDetector::detect(t, begin, end);
}

TEST(KinetoRealShapes, GpuStepAnnotationsDoNotDoubleTheSteps) {
  testing::SyntheticTraceSpec spec;
  spec.steps = 3;
  spec.gpu_step_annotations = true;
  Loaded l = load_text(testing::synthetic_trace(spec));
  ASSERT_TRUE(l.trace.has_value()) << problems_text(l);
  // Three CPU ranges (tid 2000 + rank), none of the three GPU ones (tid 7) next to them.
  ASSERT_EQ(l.trace->ranges.size(), 3u);
  for (const auto& r : l.trace->ranges) EXPECT_EQ(r.tid, 2000u);
  EXPECT_EQ(steps_of(*l.trace).steps.size(), 3u);

  // The same trace without the GPU annotations gives the same steps.
  spec.gpu_step_annotations = false;
  Loaded plain = load_text(testing::synthetic_trace(spec));
  ASSERT_TRUE(plain.trace.has_value());
  const auto a = steps_of(*l.trace), b = steps_of(*plain.trace);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].begin, b.steps[i].begin);
    EXPECT_EQ(a.steps[i].end, b.steps[i].end);
  }
}

// When the GPU runs behind the host, the GPU-side ProfilerStep#N lies after the CPU range of
// the same name (the last one after the last CPU step ended): it is the same step, whatever the
// lag — 3 CPU steps stay 3 steps (were read as 4 or 5).
TEST(KinetoRealShapes, GpuStepAnnotationsBehindTheHostAreTheSameSteps) {
  for (int64_t lag_us : {100, 300, 600, 1000, 5000}) {
    testing::SyntheticTraceSpec spec;
    spec.steps = 3;
    spec.gpu_step_annotations = true;
    spec.gpu_lag_us = lag_us;
    Loaded l = load_text(testing::synthetic_trace(spec));
    ASSERT_TRUE(l.trace.has_value()) << problems_text(l);
    ASSERT_EQ(l.trace->ranges.size(), 3u) << "lag " << lag_us << " us";
    for (const auto& r : l.trace->ranges) EXPECT_EQ(r.tid, 2000u) << "lag " << lag_us << " us";
    EXPECT_EQ(steps_of(*l.trace).steps.size(), 3u) << "lag " << lag_us << " us";
  }
}

// A GPU-side range stands in for a step number that has no CPU range (the profiler cut the CPU
// side of the last step off), when no CPU range covers its time.
TEST(KinetoRealShapes, GpuStepAnnotationStandsInForAMissingCpuStep) {
  testing::SyntheticTraceSpec spec;
  spec.steps = 3;
  spec.gpu_step_annotations = true;
  spec.skip_cpu_step = 3;
  Loaded l = load_text(testing::synthetic_trace(spec));
  ASSERT_TRUE(l.trace.has_value()) << problems_text(l);
  ASSERT_EQ(l.trace->ranges.size(), 3u);
  EXPECT_EQ(l.trace->ranges[0].tid, 2000u);
  EXPECT_EQ(l.trace->ranges[1].tid, 2000u);
  EXPECT_EQ(l.trace->ranges[2].tid, 7u);
  EXPECT_EQ(l.trace->name_of(l.trace->ranges[2].name), "ProfilerStep#3");
  EXPECT_EQ(steps_of(*l.trace).steps.size(), 3u);
}

TEST(KinetoRealShapes, GpuStepAnnotationsServeWhenThereIsNoCpuRange) {
  testing::SyntheticTraceSpec spec;
  spec.steps = 3;
  spec.gpu_step_annotations = true;
  spec.cpu_steps = false;
  Loaded l = load_text(testing::synthetic_trace(spec));
  ASSERT_TRUE(l.trace.has_value()) << problems_text(l);
  ASSERT_EQ(l.trace->ranges.size(), 3u);
  for (const auto& r : l.trace->ranges) EXPECT_EQ(r.tid, 7u);
  EXPECT_EQ(steps_of(*l.trace).steps.size(), 3u);
}

TEST(KinetoRealShapes, OneProfilerStepIsOneStep) {
  testing::SyntheticTraceSpec spec;
  spec.steps = 1;
  Loaded l = load_text(testing::synthetic_trace(spec));
  ASSERT_TRUE(l.trace.has_value()) << problems_text(l);
  ASSERT_EQ(l.trace->ranges.size(), 1u);
  const auto plan = steps_of(*l.trace);
  ASSERT_EQ(plan.steps.size(), 1u) << plan.source;
  EXPECT_NE(plan.source.find("ProfilerStep#1"), std::string::npos) << plan.source;
  EXPECT_EQ(plan.warmup, 0u);
}

// Python's json writes NaN and Infinity for float("nan") / float("inf"); torch has written
// negative durations for events whose end it missed.
TEST(KinetoRealShapes, BadTimesAreInputProblemsNotClampedOrDropped) {
  const std::string good =
      R"({"ph": "X", "cat": "kernel", "name": "good", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"stream": 7}})";
  Loaded l = load_text(testing::trace_doc({
      good,
      R"({"ph": "X", "cat": "kernel", "name": "negdur", "pid": 0, "tid": 7, "ts": 20, "dur": -3, "args": {"stream": 7}})",
      R"({"ph": "X", "cat": "kernel", "name": "nan", "pid": 0, "tid": 7, "ts": NaN, "dur": 1, "args": {"stream": 7}})",
      R"({"ph": "X", "cat": "kernel", "name": "inf", "pid": 0, "tid": 7, "ts": Infinity, "dur": 1, "args": {"stream": 7}})",
      R"({"ph": "X", "cat": "kernel", "name": "infdur", "pid": 0, "tid": 7, "ts": 30, "dur": -Infinity, "args": {"stream": 7}})",
      // 9.2e15 µs: within int64 ns, but ts + dur (or any difference) would overflow.
      R"({"ph": "X", "cat": "kernel", "name": "huge", "pid": 0, "tid": 7, "ts": 9223372036854775, "dur": 1, "args": {"stream": 7}})",
      R"({"ph": "X", "cat": "kernel", "name": "hugedur", "pid": 0, "tid": 7, "ts": 40, "dur": 9000000000000000, "args": {"stream": 7}})",
      R"({"ph": "X", "cat": "kernel", "name": "negts", "pid": 0, "tid": 7, "ts": -5, "dur": 1, "args": {"stream": 7}})",
  }));
  ASSERT_TRUE(l.trace.has_value()) << problems_text(l);
  ASSERT_EQ(l.trace->kernels.size(), 1u);
  EXPECT_EQ(l.trace->name_of(l.trace->kernels[0].name), "good");
  EXPECT_EQ(l.trace->info.skipped, 7u);
  const std::string text = problems_text(l);
  EXPECT_NE(text.find("7 events with unusable times skipped (first: event #2 'negdur': negative "
                      "dur)"),
            std::string::npos)
      << text;
}

TEST(KinetoRealShapes, GzipBombIsRefusedAsAnInputProblem) {
  // 64 MiB of one event's name in a gzip of ~64 KiB; the bound here is 4x (at least 1 MiB).
  const std::string doc = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")" +
                          std::string(std::size_t{64} << 20, 'a') + R"(", "ts": 1, "dur": 1}]})";
  LoadLimits limits;
  limits.max_inflate_ratio = 4;
  limits.min_inflated_bytes = 1 << 20;
  Loaded l = load_text(testing::gzip(doc, 9), "bomb.json.gz", limits);
  EXPECT_FALSE(l.trace.has_value());
  ASSERT_EQ(l.problems.size(), 1u) << problems_text(l);
  EXPECT_NE(l.problems[0].message.find("refused as a likely gzip bomb"), std::string::npos)
      << l.problems[0].message;

  // A real trace far below the bound inflates fine.
  testing::SyntheticTraceSpec spec;
  Loaded ok = load_text(testing::gzip(testing::synthetic_trace(spec), 9), "ok.json.gz", limits);
  EXPECT_TRUE(ok.trace.has_value()) << problems_text(ok);
}

TEST(KinetoRealShapes, OneGiganticEventIsNotHeldInMemory) {
  LoadLimits limits;
  limits.max_event_bytes = 1 << 20;
  // Inside one read chunk and across chunks (the loader reads 4 MiB at a time).
  for (std::size_t size : {std::size_t{2} << 20, std::size_t{9} << 20}) {
    const std::string doc = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")" +
                            std::string(size, 'b') + R"(", "ts": 1, "dur": 1}]})";
    Loaded l = load_text(doc, "big.json", limits);
    EXPECT_FALSE(l.trace.has_value());
    ASSERT_EQ(l.problems.size(), 1u) << problems_text(l);
    EXPECT_NE(l.problems[0].message.find("event #1 is larger than 1 MiB"), std::string::npos)
        << l.problems[0].message;
  }
}

// A FIFO no one writes to must not hang the reader; a device is not read at all.
TEST(KinetoRealShapes, FifoAndDeviceDoNotHang) {
  TempDir tmp;
  ASSERT_EQ(mkfifo(tmp.path("fifo.json").c_str(), 0600), 0);
  std::vector<model::InputProblem> problems;
  EXPECT_FALSE(load_rank(tmp.path("fifo.json"), problems).has_value());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, "empty file");
  problems.clear();
  EXPECT_FALSE(load_rank("/dev/zero", problems).has_value());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("not a regular file or pipe"), std::string::npos);
}

}  // namespace
}  // namespace ncclwatch::kineto

// PyTorch 1.8-1.9 traces (the 2021 Kineto schema) read like today's: capitalised categories,
// "external id", "stream N" tracks, nccl:<op> ops as the collectives, no distributedInfo. Before
// this reader knew the schema, such a trace was refused as "no GPU events".
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "analysis/overlap.h"
#include "kineto/kineto_loader.h"
#include "old_schema_trace.h"
#include "trace_files.h"

namespace ncclwatch::kineto {
namespace {

using testing::OldSchemaSpan;
using testing::OldSchemaSpec;
using testing::TempDir;
using testing::write_file;

// |comm ∩ compute| / |comm| over whole µs, brute force (independent of analysis::IntervalSet).
double expected_overlap(const std::vector<OldSchemaSpan>& spans) {
  int64_t end = 0;
  for (const auto& s : spans) end = std::max(end, s.end_us);
  int64_t comm = 0, both = 0;
  for (int64_t t = 0; t < end; ++t) {
    bool c = false, k = false;
    for (const auto& s : spans) {
      if (s.start_us > t || t >= s.end_us) continue;
      c = c || s.kind == OldSchemaSpan::kNccl;
      k = k || s.kind == OldSchemaSpan::kCompute;
    }
    comm += c;
    both += c && k;
  }
  return static_cast<double>(both) / static_cast<double>(comm);
}

class OldSchema : public ::testing::TestWithParam<bool> {};

TEST_P(OldSchema, ReadsLikeTheCurrentSchema) {
  TempDir tmp;
  OldSchemaSpec spec;
  spec.string_tids = GetParam();
  spec.nccl_delay_us = 150;
  std::vector<OldSchemaSpan> spans;
  write_file(tmp.path("worker0.pt.trace.json"), testing::old_schema_trace(spec, &spans));
  std::vector<model::InputProblem> problems;
  auto t = load_rank(tmp.path("worker0.pt.trace.json"), problems);
  ASSERT_TRUE(t.has_value()) << (problems.empty() ? "" : problems[0].message);
  EXPECT_TRUE(problems.empty()) << problems[0].message;
  EXPECT_EQ(t->info.rank, -1);  // no distributedInfo: numbered by load_job
  EXPECT_EQ(t->info.pid, 4242);
  ASSERT_EQ(t->kernels.size(), spans.size());
  std::size_t nccl = 0, memcpy = 0;
  for (const auto& k : t->kernels) {
    nccl += k.nccl;
    EXPECT_EQ(k.family, k.nccl ? model::CommFamily::kNccl : model::CommFamily::kNone);
    EXPECT_EQ(k.stream, k.nccl ? 13u : 7u);  // "stream 13" or 13
    EXPECT_EQ(k.device, 0);
    if (k.kind == format::ActivityKind::kMemcpy) {
      ++memcpy;
      EXPECT_EQ(k.bytes, 4194304u);
    }
  }
  EXPECT_EQ(nccl, 4u);
  EXPECT_EQ(memcpy, 4u);
  // The nccl:all_reduce ops are the calls, tied to their kernels by "external id".
  ASSERT_EQ(t->calls.size(), 4u);
  for (std::size_t i = 0; i < t->calls.size(); ++i) {
    const model::CallEvent& c = t->calls[i];
    EXPECT_EQ(c.func, format::Func::kAllReduce);
    EXPECT_EQ(c.seq, i);
    ASSERT_GE(c.kernel, 0);
    EXPECT_TRUE(t->kernels[static_cast<std::size_t>(c.kernel)].nccl);
    EXPECT_EQ(c.exit_ns - c.enter_ns, 15'000);
    EXPECT_EQ(c.gpu_end_ns - c.gpu_start_ns, (1320 - 520 - 150) * 1000);
  }
  // Launches ("Runtime") of the kept GPU work, ProfilerStep#N "Operator" ranges as steps.
  EXPECT_EQ(t->launches.size(), spans.size());
  ASSERT_EQ(t->ranges.size(), 4u);
  EXPECT_EQ(t->name_of(t->ranges[0].name), "ProfilerStep#2");
  EXPECT_NEAR(100 * analysis::overlap_fraction(*t), 100 * expected_overlap(spans), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Tids, OldSchema, ::testing::Bool(), [](const auto& info) {
  return info.param ? std::string("StreamNames") : std::string("NumericTids");
});

TEST(OldSchemaJob, RanksFromTheOrderOfTheFilesWithANote) {
  TempDir tmp;
  std::vector<std::string> files;
  for (int r = 0; r < 3; ++r) {
    OldSchemaSpec spec;
    spec.nccl_delay_us = r == 1 ? 300 : 0;
    files.push_back(tmp.path(fmt::format("worker{}.json", r)));
    write_file(files.back(), testing::old_schema_trace(spec));
  }
  model::JobTrace job = load_job({tmp.dir().string()});
  ASSERT_EQ(job.ranks.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(job.ranks[static_cast<std::size_t>(r)].info.rank, r);
    EXPECT_EQ(job.ranks[static_cast<std::size_t>(r)].info.world_size, 3);
    EXPECT_EQ(job.ranks[static_cast<std::size_t>(r)].info.source,
              files[static_cast<std::size_t>(r)]);
    ASSERT_EQ(job.ranks[static_cast<std::size_t>(r)].comms.size(), 1u);
    EXPECT_EQ(job.ranks[static_cast<std::size_t>(r)].comms[0].rank, r);
    EXPECT_EQ(job.ranks[static_cast<std::size_t>(r)].comms[0].nranks, 3);
  }
  EXPECT_TRUE(job.problems.empty());
  ASSERT_EQ(job.notes.size(), 1u);
  EXPECT_NE(job.notes[0].message.find("no rank recorded in 3 of them"), std::string::npos)
      << job.notes[0].message;
  EXPECT_NE(job.notes[0].message.find("worker1.json = rank 1"), std::string::npos);
}

}  // namespace
}  // namespace ncclwatch::kineto

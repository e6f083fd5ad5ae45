// The Nsight Systems reader on exports generated here from the documented schema: ranks from
// processes and devices (one file for the job, or one per rank), kernels with names, streams and
// devices, launches by correlation id, memcpy/memset, NVTX steps, NCCL calls made from the
// kernels and matched across ranks; and the whole report's figures against a count over the
// generated layout.
#include "nsys/nsys_loader.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "nsys_fixture.h"
#include "pipeline/pipeline.h"
#include "process.h"
#include "report/text_renderer.h"

namespace ncclwatch::nsys {
namespace {

using testing::FixtureProcess;
using testing::FixtureSpan;
using testing::FixtureSpec;

std::string note_text(const model::JobTrace& job) {
  std::string s;
  for (const auto& n : job.notes) s += n.message + "\n";
  return s;
}

TEST(NsysLoader, OneFileTwoProcessesBecomeTwoRanks) {
  test_support::TempDir tmp("ncclwatch_nsys");
  FixtureSpec spec;
  spec.processes = {{200, 1}, {100, 0}};  // device order decides, not the order in the file
  spec.target_info_gpu = true;
  const std::string path = (tmp.path() / "job.sqlite").string();
  std::vector<FixtureSpan> spans;
  const uint64_t kernels = testing::write_nsys_export(path, spec, &spans);
  model::JobTrace job = load_job({path});
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_TRUE(job.problems.empty()) << job.problems[0].message;
  EXPECT_NE(note_text(job).find("ranks numbered by device order"), std::string::npos)
      << note_text(job);
  EXPECT_NE(note_text(job).find("rank 0 = pid 100 on cuda:0, rank 1 = pid 200 on cuda:1"),
            std::string::npos)
      << note_text(job);
  std::size_t total = 0;
  for (int r = 0; r < 2; ++r) {
    const model::RankTrace& t = job.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(t.info.rank, r);
    EXPECT_EQ(t.info.world_size, 2);
    EXPECT_EQ(t.info.device, r);
    EXPECT_EQ(t.info.pid, r == 0 ? 100 : 200);
    EXPECT_EQ(t.info.host, "node-a");
    EXPECT_EQ(t.info.timing, model::TimingSource::kNsys);
    EXPECT_EQ(t.info.pci_bus_id, fmt::format("0000:{:02x}:00.0", 0x18 + r));
    EXPECT_EQ(t.info.wall_offset_ns, spec.utc_epoch_ns - spec.system_clock_ns);
    std::size_t nccl = 0, compute = 0, memcpy = 0, memset = 0;
    for (const auto& k : t.kernels) {
      EXPECT_EQ(k.device, r);
      if (k.kind == format::ActivityKind::kMemcpy) {
        ++memcpy;
        EXPECT_EQ(k.bytes, 4u << 20);
      } else if (k.kind == format::ActivityKind::kMemset) {
        ++memset;
        EXPECT_EQ(k.bytes, 4096u);
      } else if (k.nccl) {
        ++nccl;
        EXPECT_EQ(k.stream, 13u);
        EXPECT_EQ(k.family, model::CommFamily::kNccl);
      } else {
        ++compute;
        EXPECT_EQ(t.name_of(k.name), "ampere_sgemm_128x64_tn");
        EXPECT_EQ(k.stream, 7u);
      }
    }
    EXPECT_EQ(nccl, 24u);
    EXPECT_EQ(compute, 48u);
    EXPECT_EQ(memcpy, 12u);
    EXPECT_EQ(memset, 12u);
    total += nccl + compute;
    // Every kernel's launch, by correlation id; the memcpy/memset rows have none in the fixture.
    EXPECT_EQ(t.launches.size(), 72u);
    // "train_step" ranges (text or registered string), not the emit_nvtx operator ranges.
    ASSERT_EQ(t.ranges.size(), 12u);
    for (const auto& rg : t.ranges) EXPECT_EQ(t.name_of(rg.name), "train_step");
    // NCCL calls from the kernels: all-reduce, seq in launch order, on one kernel communicator.
    ASSERT_EQ(t.calls.size(), 24u);
    for (std::size_t i = 0; i < t.calls.size(); ++i) {
      EXPECT_EQ(t.calls[i].func, format::Func::kAllReduce);
      EXPECT_EQ(t.calls[i].seq, i);
      EXPECT_GE(t.calls[i].kernel, 0);
    }
    ASSERT_EQ(t.comms.size(), 1u);
    EXPECT_TRUE(t.comms[0].from_kernels);
    EXPECT_EQ(t.comms[0].nranks, 2);
    EXPECT_EQ(t.comms[0].rank, r);
  }
  EXPECT_EQ(total, kernels);
}

TEST(NsysLoader, OneFilePerRankTakesTheRankFromTheRecordedEnvironment) {
  test_support::TempDir tmp("ncclwatch_nsys");
  std::vector<std::string> files;
  for (int r = 3; r >= 0; --r) {  // given in reverse: RANK decides
    FixtureSpec spec;
    spec.processes = {{1000 + r, 0}};               // every process on its node's cuda:0
    spec.processes[0].first_step = r == 1 ? 1 : 0;  // rank 1's capture began a step later
    spec.hostname = fmt::format("node-{}", r);
    spec.env = {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}};
    files.push_back((tmp.path() / fmt::format("rank{}.sqlite", r)).string());
    testing::write_nsys_export(files.back(), spec);
  }
  model::JobTrace job = load_job(files);
  ASSERT_EQ(job.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const auto& t = job.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(t.info.rank, r);
    EXPECT_EQ(t.info.host, fmt::format("node-{}", r));
    EXPECT_EQ(t.info.world_size, 4);
    // Steps 1..11 on every rank: 22 all-reduces numbered alike (rank 1's from 0 too).
    ASSERT_EQ(t.calls.size(), 22u) << r;
    EXPECT_EQ(t.calls.front().seq, 0u);
    EXPECT_EQ(t.calls.front().gpu_start_ns / 1000 - 100'000'000, 10'000 + 1010)
        << "the first kept call is step 1's first all-reduce";
  }
  const std::string notes = note_text(job);
  EXPECT_NE(notes.find("ranks from RANK recorded in each file's environment"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("rank 1 by +2"), std::string::npos) << notes;
  EXPECT_NE(notes.find("6 calls at the ends of the capture"), std::string::npos) << notes;
}

TEST(NsysLoader, NcclNvtxRangesNameGenericKernelsAndGiveTheHostCall) {
  test_support::TempDir tmp("ncclwatch_nsys");
  FixtureSpec spec;
  spec.generic_kernels = true;
  spec.nccl_nvtx = true;
  const std::string path = (tmp.path() / "generic.sqlite").string();
  testing::write_nsys_export(path, spec);
  model::JobTrace job = load_job({path});
  ASSERT_EQ(job.ranks.size(), 2u);
  for (const auto& t : job.ranks) {
    ASSERT_EQ(t.calls.size(), 24u);
    const model::CallEvent& c = t.calls[0];
    EXPECT_EQ(c.func, format::Func::kAllReduce);
    const auto& k = t.kernels[static_cast<std::size_t>(c.kernel)];
    EXPECT_EQ(k.start_ns - c.enter_ns, 15'000);  // the range began 5 µs before the launch
    EXPECT_EQ(c.exit_ns - c.enter_ns, 13'000);
  }
  // Without the ranges the Generic kernels are communication but make no call.
  spec.nccl_nvtx = false;
  testing::write_nsys_export(path, spec);
  job = load_job({path});
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_TRUE(job.ranks[0].calls.empty());
  EXPECT_EQ(std::count_if(job.ranks[0].kernels.begin(), job.ranks[0].kernels.end(),
                          [](const auto& k) { return k.nccl; }),
            24);
}

TEST(NsysLoader, OnlyTheRequiredColumnsStillRead) {
  test_support::TempDir tmp("ncclwatch_nsys");
  FixtureSpec spec;
  spec.minimal_schema = true;  // no runtime, memcpy, NVTX, session, env tables; shortName only
  const std::string path = (tmp.path() / "minimal.sqlite").string();
  testing::write_nsys_export(path, spec);
  model::JobTrace job = load_job({path});
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_TRUE(job.problems.empty());
  EXPECT_EQ(job.ranks[0].kernels.size(), 72u);
  EXPECT_TRUE(job.ranks[0].launches.empty());
  EXPECT_EQ(job.ranks[0].calls.size(), 24u);  // enter = the kernel's start without launches
  EXPECT_EQ(job.ranks[0].info.wall_offset_ns, 0);
  EXPECT_NE(note_text(job).find("no step-like NVTX range"), std::string::npos);
}

// |comm ∩ compute| and |comm| in ns over [from, to), brute force over 1 µs cells (the layout is
// on whole µs).
std::pair<int64_t, int64_t> overlap_us(const std::vector<FixtureSpan>& spans, std::size_t p,
                                       int64_t from, int64_t to) {
  int64_t comm = 0, both = 0;
  for (int64_t t = from; t < to; t += 1000) {
    bool c = false, k = false;
    for (const auto& s : spans) {
      if (s.process != p || s.start_ns > t || t >= s.end_ns) continue;
      (s.comm ? c : k) = true;
    }
    comm += c;
    both += c && k;
  }
  return {both, comm};
}

TEST(NsysJob, FullReportAgreesWithTheLayout) {
  test_support::TempDir tmp("ncclwatch_nsys");
  FixtureSpec spec;
  spec.processes = {{100, 0}, {101, 1}, {102, 2, 600}, {103, 3}};  // rank 2 late by 600 µs
  const std::string path = (tmp.path() / "job.sqlite").string();
  std::vector<FixtureSpan> spans;
  testing::write_nsys_export(path, spec, &spans);
  model::JobTrace job = load_job({path});
  ASSERT_EQ(job.ranks.size(), 4u);
  pipeline::PipelineOptions options;
  options.link_gpu = false;
  pipeline::PipelineResult res = pipeline::run_pipeline(job, options);
  const std::string text = report::render_text(res.report);
  const auto& j = res.report.json;
  EXPECT_NE(text.find("4 ranks, 1 comm: all 24 instances matched on every rank"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("host-only"), std::string::npos) << text;
  ASSERT_EQ(j["overlap"].size(), 4u);
  EXPECT_EQ(j["overlap_analysis"]["step_source"], "ranges named like 'train_step'");
  for (std::size_t r = 0; r < 4; ++r) {
    const auto& o = j["overlap"][r];
    EXPECT_EQ(o["steps"], 11);
    // Steady window: steps 2..12 (step 1 is warm-up), each step's train_step range.
    const int64_t from = spec.base_ns + spec.step_us * 1000,
                  to = spec.base_ns + spec.steps * spec.step_us * 1000;
    const auto [both, comm] = overlap_us(spans, r, from, to);
    EXPECT_NEAR(o["comm_us"].get<double>(), static_cast<double>(comm), 0.5) << r;
    EXPECT_NEAR(o["overlap_pct"].get<double>(), 100.0 * both / comm, 0.01) << r;
    // Ranks wait 600 µs for rank 2 at each of 2 all-reduces per step.
    EXPECT_NEAR(o["peer_wait_us"].get<double>(), r == 2 ? 0.0 : 11 * 2 * 600.0, 0.5) << r;
  }
  ASSERT_GE(j["stragglers"].size(), 1u) << text;
  EXPECT_EQ(j["stragglers"][0]["rank"], 2) << text;
  EXPECT_NEAR(j["stragglers"][0]["lateness_us"].get<double>(), 600.0, 1.0);
  ASSERT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["ranks"][0]["timing"], "nsys");
}

}  // namespace
}  // namespace ncclwatch::nsys

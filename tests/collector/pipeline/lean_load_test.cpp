// report's lean load (pipeline/lean_load.h): a rank's GPU records are dropped once digested, and
// read again, checked, where the analysis needs them under other steps; a windowed run is read
// whole; the report is the same as with the records kept (NCCLWATCH_REPORT_LOAD=whole).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/rank_digest.h"
#include "pipeline/lean_load.h"
#include "pipeline/report_job.h"
#include "process.h"
#include "trace/job_loader.h"
#include "trace/rank_loader.h"
#include "trace_fixture.h"

namespace ncclwatch::pipeline {
namespace {

using format::Func;
using format::Record;
namespace tt = trace::testing;

constexpr int64_t kMs = 1'000'000;
constexpr int kSteps = 12;

// Rank r of 2: an all-reduce per step with its launch link and NCCL kernel, a compute kernel
// before it; rank 1 computes 3 ms longer. `window`: the capture window marks of a run that
// recorded steps 4-8 in detail (the records stay for every step: the marks are what counts).
std::vector<Record> rank_records(int r, bool window) {
  std::vector<Record> rs = {tt::make_identity(r, 2, r, r),
                            tt::make_clock(kMs, 1'764'806'400 * 1'000'000'000LL, 10),
                            tt::make_comm(0x42, 2, r, kMs)};
  for (const Record& c : tt::make_string(1, "sgemm_kernel")) rs.push_back(c);
  for (int s = 0; s < kSteps; ++s) {
    const int64_t t0 = 10 * kMs + s * 20 * kMs;
    const auto seq = static_cast<uint32_t>(s);
    const uint32_t corr = 100 + 2 * seq;
    rs.push_back(tt::make_kernel(t0, t0 + 10 * kMs + 3 * kMs * r, corr + 1, 1, false));
    const int64_t enter = t0 + 11 * kMs + 3 * kMs * r;
    rs.push_back(tt::make_call(Func::kAllReduce, 0x42, seq, enter, enter + 50'000, 1 << 20));
    rs.push_back(tt::make_link(enter + 10'000, 0x42, seq, corr));
    rs.push_back(tt::make_kernel(enter + 20'000, t0 + 17 * kMs, corr, 0, true));
  }
  if (window) {
    const int64_t a = 10 * kMs + 4 * 20 * kMs, b = 10 * kMs + 8 * 20 * kMs;
    rs.push_back(tt::make_window(format::WindowEvent::kOpen, 1, format::WindowTrigger::kOnDemand, a,
                                 0, 4, 8));
    rs.push_back(tt::make_window(format::WindowEvent::kClose, 1, format::WindowTrigger::kOnDemand,
                                 a, b, 4, 8));
  }
  return rs;
}

using test_support::slurp;

// report_job's text and JSON file with NCCLWATCH_REPORT_LOAD=`load` (this test's threads are
// the only ones: setenv is safe here).
std::string report(const std::string& dir, const char* load) {
  setenv("NCCLWATCH_REPORT_LOAD", load, 1);
  ReportRequest req;
  req.dir = dir;
  req.json_path = dir + "/report." + load + ".json";
  req.progress = false;
  req.unicode = false;
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  report_job(req, out, err);
  unsetenv("NCCLWATCH_REPORT_LOAD");
  slurp(err);
  std::FILE* json = std::fopen(req.json_path.c_str(), "r");
  return slurp(out) + (json ? slurp(json) : std::string("(no JSON)"));
}

TEST(LeanLoad, ARanksGpuRecordsAreDroppedAndReadAgainTheSame) {
  tt::TempDir dir;
  tt::write_rank(dir.path(), "job", "h", 100, 0, 2, rank_records(0, false));
  const trace::JobIndex index = trace::index_job(dir.path());
  ASSERT_EQ(index.files.size(), 1u);
  std::vector<model::InputProblem> problems;
  model::RankTrace rank = trace::load_rank_parts(index.files[0].parts, problems);
  ASSERT_EQ(rank.kernels.size(), 2u * kSteps);
  digest_rank(index.files[0], rank, false);
  EXPECT_TRUE(rank.kernels.empty());
  EXPECT_TRUE(rank.links.empty());
  ASSERT_TRUE(rank.dropped);
  EXPECT_EQ(rank.dropped->kernels, 2u * kSteps);
  // Linked before the records went: the calls keep their GPU intervals.
  EXPECT_TRUE(rank.calls.front().has_gpu());
  ASSERT_TRUE(rank.digest && rank.digest->reload);
  std::string why;
  const std::optional<model::RankTrace> again = rank.digest->reload(why);
  ASSERT_TRUE(again) << why;
  EXPECT_EQ(again->kernels.size(), 2u * kSteps);
  EXPECT_TRUE(again->calls.front().has_gpu());

  // The file grows (a live job) between the two reads: not the same rank, and it says so.
  std::vector<Record> more = rank_records(0, false);
  more.push_back(tt::make_kernel(900 * kMs, 901 * kMs, 999, 1, false));
  tt::write_rank(dir.path(), "job", "h", 100, 0, 2, more);
  EXPECT_FALSE(rank.digest->reload(why));
  EXPECT_NE(why.find("its trace changed while the report read it"), std::string::npos) << why;
}

TEST(LeanLoad, ARankCutIntoWindowsKeepsItsRecords) {
  tt::TempDir dir;
  tt::write_rank(dir.path(), "job", "h", 100, 0, 2, rank_records(0, true));
  const trace::JobIndex index = trace::index_job(dir.path());
  std::vector<model::InputProblem> problems;
  model::RankTrace rank = trace::load_rank_parts(index.files[0].parts, problems);
  digest_rank(index.files[0], rank, false);
  EXPECT_FALSE(rank.digest);
  EXPECT_EQ(rank.kernels.size(), 2u * kSteps);
}

TEST(LeanLoad, TheReportIsTheWholeLoadsReport) {
  tt::TempDir dir;
  for (int r = 0; r < 2; ++r)
    tt::write_rank(dir.path(), "job", "h", 100 + r, r, 2, rank_records(r, false));
  const std::string lean = report(dir.path(), "lean");
  EXPECT_NE(lean.find("\"kernels_analysis\""), std::string::npos) << lean;
  EXPECT_EQ(lean, report(dir.path(), "whole"));
}

// A windowed run where one rank has no window marks (a rank that died before any window opened:
// its records are one whole run, so it is digested): no window holds it, the windows are cut from
// the other's records, and the report is the same.
TEST(LeanLoad, ARankWithoutMarksInAWindowedRunIsInNoWindow) {
  tt::TempDir dir;
  tt::write_rank(dir.path(), "job", "h", 100, 0, 2, rank_records(0, true));
  tt::write_rank(dir.path(), "job", "h", 101, 1, 2, rank_records(1, false));
  const std::string lean = report(dir.path(), "lean");
  EXPECT_NE(lean.find("capture window"), std::string::npos) << lean;
  EXPECT_EQ(lean, report(dir.path(), "whole"));
}

}  // namespace
}  // namespace ncclwatch::pipeline

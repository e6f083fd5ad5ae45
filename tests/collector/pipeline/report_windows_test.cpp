// report_job on traces with step summaries and capture windows (layout version 5, written here
// from format.h): the history first, then each window's analysis newest first; --window N; a
// whole-run window reports as before with a short history; a trace without summaries as before.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "pipeline/report_job.h"
#include "process.h"
#include "trace_fixture.h"

namespace ncclwatch::pipeline {
namespace {

using format::Func;
using format::Record;
namespace tt = trace::testing;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kStepNs = 20 * kMs;
constexpr int kSteps = 40;

struct Window {
  uint64_t id;
  format::WindowTrigger trigger;
  int first, end;  // steps [first, end)
  std::string text;
};

// Rank r of a 2-rank job: one all-reduce per step (rank 1 slow from step 20 on: 6 ms more
// compute, so it arrives late), a step summary per step, detail only inside `windows` (or all of
// it with `whole_run`), each window marked as the shim marks it.
void write_job(const std::string& dir, const std::vector<Window>& windows, bool whole_run,
               bool summaries = true) {
  for (int r = 0; r < 2; ++r) {
    std::vector<Record> rs = {tt::make_identity(r, 2, r, r),
                              tt::make_clock(kMs, 1'764'806'400 * 1'000'000'000LL, 10),
                              tt::make_comm(0x42, 2, r, kMs)};
    uint32_t text_id = 0x80000001u;
    if (whole_run) {  // the shim's first record of a run in full detail
      rs.push_back(tt::make_window(format::WindowEvent::kOpen, 0, format::WindowTrigger::kWholeRun,
                                   kMs, 0, 0, format::kNoStep));
    }
    const auto in_window = [&](int step) {
      if (whole_run) return true;
      for (const Window& w : windows)
        if (step >= w.first && step < w.end) return true;
      return false;
    };
    for (int s = 0; s < kSteps; ++s) {
      const int64_t t0 = 10 * kMs + s * kStepNs;
      const int64_t late = (r == 1 && s >= 20) ? 6 * kMs : 0;
      const int64_t enter = t0 + 12 * kMs + late;
      const int64_t end = t0 + 12 * kMs + 6 * kMs * (s >= 20) + 2 * kMs;
      if (in_window(s)) {
        rs.push_back(tt::make_kernel(t0 + kMs, t0 + 11 * kMs + late, 2 * s + 1, 0, false));
        rs.push_back(tt::make_call(Func::kAllReduce, 0x42, static_cast<uint32_t>(s), enter,
                                   enter + 50'000, 1 << 20));
        rs.push_back(tt::make_kernel(enter + 10'000, end, 2 * s + 2, 0, true));
      }
      const uint32_t step_us = (s >= 20) ? 26'000 : 20'000;
      rs.push_back(
          tt::make_step(static_cast<uint32_t>(s), t0, step_us, static_cast<uint32_t>(s), enter, end,
                        static_cast<uint32_t>((10 * kMs + late) / 1000),
                        static_cast<uint32_t>((end - enter) / 1000),
                        step_us - static_cast<uint32_t>((10 * kMs + late + end - enter) / 1000)));
      if (!summaries) rs.pop_back();
    }
    if (whole_run) {
      rs.push_back(tt::make_window(format::WindowEvent::kClose, 0, format::WindowTrigger::kWholeRun,
                                   kMs, 10 * kMs + kSteps * kStepNs, 0, kSteps));
    }
    for (const Window& w : windows) {
      uint32_t tid = 0;
      if (!w.text.empty()) {
        tid = text_id++;
        for (const Record& c : tt::make_string(tid, w.text)) rs.push_back(c);
      }
      const int64_t a = 10 * kMs + w.first * kStepNs, b = 10 * kMs + w.end * kStepNs;
      rs.push_back(tt::make_window(format::WindowEvent::kOpen, w.id, w.trigger, a, 0,
                                   static_cast<uint64_t>(w.first), static_cast<uint64_t>(w.end),
                                   tid));
      rs.push_back(tt::make_window(format::WindowEvent::kClose, w.id, w.trigger, a, b,
                                   static_cast<uint64_t>(w.first), static_cast<uint64_t>(w.end),
                                   tid));
    }
    tt::write_rank(dir, "job", "h", 100 + r, r, 2, rs);
  }
}

struct Result {
  ReportStatus status;
  std::string out, err;
  nlohmann::json json;
};

using test_support::slurp;

Result report(const std::string& dir, std::size_t window = 0) {
  ReportRequest req;
  req.dir = dir;
  req.json_path = dir + "/report.json";
  req.progress = false;
  req.window = window;
  req.unicode = false;
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  Result r;
  r.status = report_job(req, out, err);
  r.out = slurp(out);
  r.err = slurp(err);
  std::ifstream in(req.json_path);
  if (in) r.json = nlohmann::json::parse(in, nullptr, false);
  std::remove(req.json_path.c_str());
  return r;
}

const std::vector<Window> kTwoWindows = {
    {5, format::WindowTrigger::kOnDemand, 5, 10, ""},
    {9, format::WindowTrigger::kStepTime, 25, 30, "step time +30% since 00:00:00"}};

TEST(ReportWindows, HistoryThenEachWindowNewestFirst) {
  tt::TempDir dir;
  write_job(dir.path(), kTwoWindows, false);
  const Result r = report(dir.path());
  ASSERT_NE(r.status, ReportStatus::kError) << r.err;
  const auto history = r.out.find("History");
  const auto newest = r.out.find("window 2 of 2, step-time: steps 25-29");
  const auto oldest = r.out.find("window 1 of 2, on-demand: steps 5-9");
  ASSERT_NE(history, std::string::npos) << r.out;
  ASSERT_NE(newest, std::string::npos) << r.out;
  ASSERT_NE(oldest, std::string::npos) << r.out;
  EXPECT_LT(history, newest);
  EXPECT_LT(newest, oldest);
  EXPECT_NE(r.out.find("step time +30% since 00:00:00"), std::string::npos);
  EXPECT_NE(r.out.find("(newest)"), std::string::npos);
  // The history names the late rank and the regression it caused, with their start.
  EXPECT_NE(r.out.find("rank 1 slow from 00:00:00 to 00:00:00 UTC (steps 20-39)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("step time +30% from step 20"), std::string::npos) << r.out;
  EXPECT_EQ(r.status, ReportStatus::kFindings);
  // JSON: the newest window's report at the top, the history and both windows beside it.
  ASSERT_TRUE(r.json.is_object()) << r.err;
  EXPECT_EQ(r.json["history"]["steps"], kSteps);
  ASSERT_EQ(r.json["windows"].size(), 2u);
  EXPECT_EQ(r.json["windows"][1]["trigger"], "step-time");
  EXPECT_EQ(r.json["windows"][1]["text"], "step time +30% since 00:00:00");
  EXPECT_TRUE(r.json["windows"][0]["report"].is_object());
  EXPECT_TRUE(r.json["windows"][1]["report"].is_object());
  EXPECT_TRUE(r.json["findings"].is_array());
  // Each window's analysis saw its own steps only: 5 all-reduces on each of 2 ranks.
  EXPECT_EQ(r.json["windows"][0]["report"]["ranks"][0]["collectives"], 5)
      << r.json["windows"][0]["report"].dump().substr(0, 2000);
}

TEST(ReportWindows, WindowNPicksOne) {
  tt::TempDir dir;
  write_job(dir.path(), kTwoWindows, false);
  const Result r = report(dir.path(), 1);
  ASSERT_NE(r.status, ReportStatus::kError) << r.err;
  EXPECT_NE(r.out.find("window 1 of 2, on-demand"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("window 2 of 2"), std::string::npos) << r.out;
  EXPECT_TRUE(r.json["windows"][0]["report"].is_object());
  EXPECT_FALSE(r.json["windows"][1].contains("report"));
  const Result bad = report(dir.path(), 3);
  EXPECT_EQ(bad.status, ReportStatus::kUsage);
  EXPECT_NE(bad.err.find("--window 3: the run has 2 capture window(s)"), std::string::npos)
      << bad.err;
}

TEST(ReportWindows, AWholeRunWindowReportsAsBeforeWithAShortHistory) {
  tt::TempDir dir;
  write_job(dir.path(), {}, true);
  const Result r = report(dir.path());
  ASSERT_NE(r.status, ReportStatus::kError) << r.err;
  EXPECT_EQ(r.out.find("========"), std::string::npos) << r.out;
  const auto history = r.out.find("History");
  ASSERT_NE(history, std::string::npos) << r.out;
  EXPECT_GT(history, r.out.find("Ranks"));  // after the analyses' sections
  ASSERT_EQ(r.json["windows"].size(), 1u);
  EXPECT_EQ(r.json["windows"][0]["trigger"], "whole-run");
  EXPECT_EQ(r.json["history"]["steps"], kSteps);
  for (const auto& f : r.json["findings"]) EXPECT_NE(f["source"], "history");
  const Result again = report(dir.path(), 2);
  EXPECT_EQ(again.status, ReportStatus::kUsage);
}

TEST(ReportWindows, ATraceWithoutSummariesReportsAsBefore) {
  tt::TempDir dir;
  write_job(dir.path(), {}, true, false);
  const Result r = report(dir.path());
  ASSERT_NE(r.status, ReportStatus::kError) << r.err;
  EXPECT_EQ(r.out.find("History"), std::string::npos) << r.out;
  EXPECT_FALSE(r.json.contains("history"));
  EXPECT_FALSE(r.json.contains("windows"));
}

}  // namespace
}  // namespace ncclwatch::pipeline

// collector/history: the fold of every rank's step summaries into periods, what the periods show
// (late ranks with their span and cause, regressions with their start), bounded memory, and the
// summaries read back from trace files.
#include <gtest/gtest.h>

#include "history/history.h"
#include "history/history_findings.h"
#include "history/history_report.h"
#include "history/period_folder.h"
#include "history/step_stream.h"
#include "history_sim.h"
#include "trace_fixture.h"

namespace ncclwatch::history {
namespace {

using testing::SimJob;
using testing::Slowdown;

History run(const SimJob& job, std::size_t max_periods = 400) {
  auto sources = testing::sim_sources(job);
  HistoryOptions o;
  o.max_periods = max_periods;
  return build_history(testing::sim_ranks(job), sources, o);
}

uint64_t period_width(const History& h) {
  return h.periods.front().steps;
}

TEST(History, ARankTurningSlowMidRunIsNamedWithItsSpanAndCause) {
  SimJob job;
  job.steps = 2000;
  job.ntp_error_ms = 2;  // host 1's wall clock 2 ms off: the common GPU end aligns it
  job.slowdowns.push_back({5, 800, 1400, 6.0, 0, 0});
  const History h = run(job);
  ASSERT_EQ(h.steps, 2000u);
  EXPECT_TRUE(h.clocks_from_sync);
  ASSERT_EQ(h.slow_ranks.size(), 1u);
  const SlowRank& s = h.slow_ranks[0];
  EXPECT_EQ(h.ranks[s.rank].rank, 5);
  const uint64_t w = period_width(h);
  EXPECT_LE(s.first_step, 800u + w);
  EXPECT_GE(s.first_step + w, 800u);
  EXPECT_LE(s.last_step, 1399u + w);
  EXPECT_GE(s.last_step + w, 1399u);
  EXPECT_NEAR(s.late_ms, 6.0, 1.0);
  EXPECT_EQ(s.cause, analysis::Cause::kGpuSlow);
  EXPECT_NEAR(s.compute_excess_ms, 6.0, 1.0);
  const std::string text = slow_rank_text(h, s);
  EXPECT_NE(text.find("rank 5 slow from 00:00:"), std::string::npos) << text;
  EXPECT_NE(text.find("cause gpu-slow"), std::string::npos) << text;
  // The others waited for it: the waiting shows in the breakdown of those periods, not before.
  EXPECT_NEAR(h.periods[s.first_period + 1].wait_ms, 6.0, 0.5);
  EXPECT_NEAR(h.periods.front().wait_ms, 0.0, 0.1);
}

TEST(History, AHostStallIsNamedSo) {
  SimJob job;
  job.steps = 600;
  job.slowdowns.push_back({2, 100, 600, 0, 5.0, 0});
  const History h = run(job);
  ASSERT_EQ(h.slow_ranks.size(), 1u);
  EXPECT_EQ(h.ranks[h.slow_ranks[0].rank].rank, 2);
  EXPECT_EQ(h.slow_ranks[0].cause, analysis::Cause::kHostStall);
  EXPECT_EQ(h.slow_ranks[0].last_step, 599u);
}

TEST(History, WithoutSyncAWrongWallClockIsNotASlowRank) {
  // Host-only summaries (no GPU end to align by): the hosts' clocks are NTP's, and a 0.2 ms NTP
  // error stays under the lateness floor of a 20 ms step.
  SimJob job;
  job.gpu = false;
  job.ntp_error_ms = 0.2;
  const History h = run(job);
  EXPECT_FALSE(h.clocks_from_sync);
  EXPECT_TRUE(h.slow_ranks.empty());
  EXPECT_EQ(h.periods.front().compute_ms, -1);
}

TEST(History, ARegressionIsFoundWithItsStartAndWhatGrew) {
  SimJob job;
  job.steps = 5000;
  job.slowdowns.push_back({-1, 3000, 5000, 0, 0, 4.0});  // the network: every rank
  const History h = run(job);
  EXPECT_TRUE(h.slow_ranks.empty());
  ASSERT_EQ(h.regressions.size(), 1u);
  const Regression& g = h.regressions[0];
  const uint64_t w = period_width(h);
  EXPECT_LE(g.first_step, 3000u + w);
  EXPECT_GE(g.first_step + w, 3000u);
  EXPECT_TRUE(g.until_end);
  EXPECT_NEAR(g.baseline_ms, 20.0, 0.1);
  EXPECT_NEAR(g.step_ms, 24.0, 0.3);
  EXPECT_EQ(g.grew, "exposed communication");
  EXPECT_NEAR(g.grew_ms, 4.0, 0.3);
  const std::string text = regression_text(h, g);
  EXPECT_NE(text.find("step time +20%"), std::string::npos) << text;
  EXPECT_NE(text.find("to the end"), std::string::npos) << text;
}

// Capture windows slow the job by themselves (full detail: CUPTI's launch records): their steps
// are no regression, and the baseline is taken outside them -- unless the whole run is one window.
TEST(History, CaptureWindowsAreNoRegression) {
  SimJob job;
  job.steps = 5000;
  job.windows = {{0, 50}, {2000, 2200}};
  job.slowdowns.push_back({-1, 0, 50, 6.0, 0, 0});  // +30 % while captured
  job.slowdowns.push_back({-1, 2000, 2200, 6.0, 0, 0});
  EXPECT_TRUE(run(job).regressions.empty());
  job.slowdowns.push_back({-1, 4000, 5000, 0, 0, 4.0});  // the network, outside every window
  const History h = run(job);
  ASSERT_EQ(h.regressions.size(), 1u);
  EXPECT_GE(h.regressions[0].first_step + period_width(h), 4000u);
  EXPECT_NEAR(h.regressions[0].baseline_ms, 20.0, 0.1);
  EXPECT_EQ(h.regressions[0].grew, "exposed communication");
  // The same slowdown with every step in detail (NCCLWATCH_DETAIL=all) is found as before.
  job.windows = {{0, 5000}};
  job.slowdowns.erase(job.slowdowns.begin(), job.slowdowns.begin() + 2);
  job.slowdowns.push_back({-1, 2000, 2200, 6.0, 0, 0});
  EXPECT_EQ(run(job).regressions.size(), 2u);
}

// A finding of the history warns only when it costs the run what a straggler must
// (analysis::kWarnCostPct); a short blip in a long run is an info line.
TEST(HistoryReport, ABlipInALongRunIsInfo) {
  SimJob job;
  job.steps = 20000;
  job.slowdowns.push_back({3, 10000, 10040, 6.0, 0, 0});   // 40 steps of 20000: 0.06 % of the run
  job.slowdowns.push_back({-1, 14000, 20000, 0, 0, 4.0});  // the last 30 %: 6 % of the run
  const History h = run(job);
  ASSERT_EQ(h.slow_ranks.size(), 1u);
  ASSERT_FALSE(h.regressions.empty());
  model::Report report;
  add_history(h, report);
  int warnings = 0, infos = 0;
  for (const auto& f : report.findings) {
    if (f.text.find("rank 3 slow") != std::string::npos) {
      EXPECT_EQ(f.severity, model::Severity::kInfo) << f.text;
    }
    (f.severity == model::Severity::kWarning ? warnings : infos)++;
  }
  EXPECT_EQ(warnings, 1) << "the network regression";
  EXPECT_GE(infos, 1);
}

TEST(History, ASteadyRunShowsNothing) {
  SimJob job;
  job.steps = 3000;
  const History h = run(job);
  EXPECT_TRUE(h.slow_ranks.empty());
  EXPECT_TRUE(h.regressions.empty());
  ASSERT_FALSE(h.periods.empty());
  EXPECT_NEAR(h.periods[3].step_ms, 20.0, 0.01);
  EXPECT_NEAR(h.periods[3].compute_ms, 15.0, 0.01);
  EXPECT_NEAR(h.periods[3].exposed_ms, 2.0, 0.01);
  EXPECT_NEAR(h.periods[3].idle_ms, 3.0, 0.01);
}

// Memory does not grow with the run: the folder never holds more than max_periods periods, and
// at the end they cover every step, in order, without gaps.
TEST(History, FoldingKeepsMemoryBounded) {
  SimJob job;
  job.ranks = 4;
  job.steps = 200'000;
  std::vector<std::size_t> host_of;
  std::vector<int64_t> offsets;
  for (const RankSource& r : testing::sim_ranks(job)) {
    host_of.push_back(r.host == "host0" ? 0 : 1);
    offsets.push_back(r.wall_offset_ns);
  }
  PeriodFolder folder(host_of, offsets, 400);
  std::vector<format::StepRecord> recs(4);
  std::vector<const format::StepRecord*> cur(4);
  std::size_t most = 0;
  for (uint64_t s = 0; s < job.steps; ++s) {
    for (int r = 0; r < 4; ++r) {
      recs[r] = testing::sim_step(job, r, s);
      cur[r] = &recs[r];
    }
    folder.add(s, cur);
    most = std::max(most, folder.periods());
  }
  EXPECT_LE(most, 400u);
  const std::vector<Period> ps = folder.finish();
  EXPECT_GE(ps.size(), 200u);
  EXPECT_LE(ps.size(), 400u);
  uint64_t next = 0, total = 0;
  for (const Period& p : ps) {
    EXPECT_EQ(p.first_step, next);
    next = p.last_step + 1;
    total += p.steps;
  }
  EXPECT_EQ(next, job.steps);
  EXPECT_EQ(total, job.steps);
}

// One rank's summaries from a list.
class Listed : public StepSource {
 public:
  explicit Listed(std::vector<format::StepRecord> v) : v_(std::move(v)) {}
  bool next(format::StepRecord& out) override {
    if (at_ >= v_.size()) return false;
    out = v_[at_++];
    return true;
  }

 private:
  std::vector<format::StepRecord> v_;
  std::size_t at_ = 0;
};

TEST(History, RanksMissingStepsAndStepsOutOfOrder) {
  // Rank 1 misses step 2 and repeats step 1; the others still join.
  SimJob job;
  job.ranks = 2;
  job.hosts = 1;
  std::vector<std::unique_ptr<StepSource>> sources;
  sources.push_back(std::make_unique<Listed>(
      std::vector<format::StepRecord>{testing::sim_step(job, 0, 0), testing::sim_step(job, 0, 1),
                                      testing::sim_step(job, 0, 2), testing::sim_step(job, 0, 3)}));
  sources.push_back(std::make_unique<Listed>(
      std::vector<format::StepRecord>{testing::sim_step(job, 1, 0), testing::sim_step(job, 1, 1),
                                      testing::sim_step(job, 1, 1), testing::sim_step(job, 1, 3)}));
  const History h = build_history(testing::sim_ranks(job), sources);
  EXPECT_EQ(h.steps, 4u);
  EXPECT_EQ(h.out_of_order, 1u);
  ASSERT_EQ(h.periods.size(), 4u);
  EXPECT_EQ(h.periods[2].ranks[1].steps, 0u);
  EXPECT_EQ(h.periods[2].ranks[0].steps, 1u);
}

TEST(History, ARankThatCountedSecondsWhileItLearnedJoinsItsPeersOnceItLearned) {
  // Rank 1 counted two Unix seconds of the clock before it learned the job's steps, and its
  // numbers restarted at step 2 (shim/record/step_summarizer.h): its seconds stand alone, and
  // its learned steps join rank 0's, none of them out of order.
  SimJob job;
  job.ranks = 2;
  job.hosts = 1;
  auto on_clock = [&](uint32_t second) {
    format::StepRecord s = testing::sim_step(job, 1, 0);
    s.step = second;
    s.prefix.u8a = static_cast<uint8_t>(format::StepSource::kInterval);
    return s;
  };
  std::vector<std::unique_ptr<StepSource>> sources;
  sources.push_back(std::make_unique<Listed>(
      std::vector<format::StepRecord>{testing::sim_step(job, 0, 0), testing::sim_step(job, 0, 1),
                                      testing::sim_step(job, 0, 2), testing::sim_step(job, 0, 3)}));
  sources.push_back(std::make_unique<Listed>(
      std::vector<format::StepRecord>{on_clock(1'700'000'000), on_clock(1'700'000'001),
                                      testing::sim_step(job, 1, 2), testing::sim_step(job, 1, 3)}));
  const History h = build_history(testing::sim_ranks(job), sources);
  EXPECT_EQ(h.out_of_order, 0u);
  EXPECT_EQ(h.steps, 6u);
  ASSERT_EQ(h.periods.size(), 6u);
  EXPECT_EQ(h.periods[0].first_step, 1'700'000'000u);
  EXPECT_EQ(h.periods[0].ranks[1].steps, 1u);
  EXPECT_EQ(h.periods[0].ranks[0].steps, 0u);
  EXPECT_EQ(h.periods[2].first_step, 0u);
  EXPECT_EQ(h.periods[2].ranks[1].steps, 0u);
  EXPECT_EQ(h.periods[4].first_step, 2u);
  EXPECT_EQ(h.periods[4].ranks[0].steps, 1u);
  EXPECT_EQ(h.periods[4].ranks[1].steps, 1u);
}

TEST(History, ReadFromTraceFiles) {
  namespace tt = trace::testing;
  tt::TempDir dir;
  SimJob job;
  job.ranks = 2;
  job.hosts = 1;
  job.steps = 50;
  job.slowdowns.push_back({1, 0, 50, 5.0, 0, 0});
  std::vector<RankSource> ranks = testing::sim_ranks(job);
  for (int r = 0; r < 2; ++r) {
    std::vector<format::Record> rs;
    rs.push_back(tt::make_comm(0x42, 2, r, 10));
    for (uint64_t s = 0; s < job.steps; ++s) {
      format::Record rec{};
      rec.step = testing::sim_step(job, r, s);
      rs.push_back(rec);
      rs.push_back(
          tt::make_call(format::Func::kAllReduce, 0x42, static_cast<uint32_t>(s), 100, 200));
    }
    format::Record bad{};
    bad.step = testing::sim_step(job, r, 60);
    bad.step.compute_us = bad.step.duration_us + 1;  // more compute than the step: invalid
    rs.push_back(bad);
    ranks[r].parts.push_back(tt::write_rank(dir.path(), "j", "host0", 10 + r, r, 2, rs));
  }
  ranks[1].parts.push_back(dir.file("missing.trace"));
  std::vector<std::string> problems;
  const History h = build_history(ranks, problems);
  EXPECT_EQ(h.steps, 50u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("missing.trace"), std::string::npos);
  ASSERT_EQ(h.slow_ranks.size(), 1u);
  EXPECT_EQ(h.ranks[h.slow_ranks[0].rank].rank, 1);
  // With two ranks the median arrival is halfway: the late one is 2.5 ms after it.
  EXPECT_NEAR(h.slow_ranks[0].late_ms, 2.5, 0.1);
}

TEST(HistoryReport, SectionFindingsAndJson) {
  SimJob job;
  job.steps = 2000;
  job.slowdowns.push_back({5, 800, 1400, 6.0, 0, 0});
  job.slowdowns.push_back({-1, 1600, 2000, 0, 0, 4.0});
  const History h = run(job);
  model::Report report;
  add_history(h, report);
  ASSERT_FALSE(report.sections.empty());
  EXPECT_EQ(report.sections[0].title, "History");
  const std::string& body = report.sections[0].body;
  EXPECT_NE(body.find("8 ranks, 2000 steps (0-1999)"), std::string::npos) << body;
  EXPECT_NE(body.find("rank 5 slow from"), std::string::npos) << body;
  EXPECT_NE(body.find("regressions:"), std::string::npos) << body;
  // The late rank slowed every step too: a regression of its own, which names it.
  EXPECT_EQ(report.findings.size(), 3u);
  EXPECT_NE(body.find("rank 5 was late meanwhile (cause gpu-slow)"), std::string::npos) << body;
  const auto& j = report.json["history"];
  EXPECT_EQ(j["steps"], 2000);
  EXPECT_EQ(j["late_ranks"].size(), 1u);
  EXPECT_EQ(j["late_ranks"][0]["rank"], 5);
  EXPECT_EQ(j["late_ranks"][0]["cause"], "gpu-slow");
  ASSERT_EQ(j["regressions"].size(), 2u);
  EXPECT_EQ(j["regressions"][0]["late_rank"], 5);
  EXPECT_EQ(j["regressions"][1]["late_rank"], nullptr);
  EXPECT_EQ(j["regressions"][1]["grew"], "exposed communication");
  EXPECT_LE(j["periods"].size(), 400u);
  EXPECT_EQ(j["clocks"], "sync");
  // Table rows are bounded whatever the number of periods.
  std::size_t rows = 0;
  for (std::size_t at = body.find('\n'); at != std::string::npos; at = body.find('\n', at + 1))
    ++rows;
  EXPECT_LT(rows, 30u);
}

}  // namespace
}  // namespace ncclwatch::history

// The utilization curve, its sparkline and the one-step swimlanes, on the DDP simulator whose
// shapes follow from its knobs: a sawtooth drops to 0 at every step boundary, a checkpoint step
// is marked and sits in the sparkline, a straggler starts late while its peers wait, big jobs
// are aggregated to bounded rows and bins, and what nvidia-smi would sample is the busy share
// of each window.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/analyze.h"
#include "analysis/step_swimlane.h"
#include "analysis/time_bins.h"
#include "analysis/utilization_curve.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

using nlohmann::json;

model::Report run(const testing::SimParams& p) {
  const auto s = testing::simulate(p);
  model::Report r;
  analyze(s.job, s.match, s.clocks, r);
  return r;
}

// Bins of the window curve inside step mark `m` (the bins that start in it).
std::vector<double> in_step(const json& window, const json& m, const char* series) {
  const double b0 = window["begin_us"], w = window["bin_us"];
  std::vector<double> out;
  for (std::size_t k = 0; k < window[series].size(); ++k) {
    const double t = b0 + w * static_cast<double>(k);
    if (t >= m["begin_us"].get<double>() && t + w <= m["end_us"].get<double>())
      out.push_back(window[series][k]);
  }
  return out;
}

std::size_t longest_run_at_most(const std::vector<double>& v, double limit) {
  std::size_t best = 0, run = 0;
  for (double x : v) {
    run = x <= limit ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

TEST(TimeBins, NiceWidths) {
  EXPECT_EQ(nice_floor(7), 5);
  EXPECT_EQ(nice_floor(10), 10);
  EXPECT_EQ(nice_floor(19), 10);
  EXPECT_EQ(nice_floor(49), 20);
  EXPECT_EQ(nice_floor(410'000), 200'000);
  EXPECT_EQ(nice_ceil(7), 10);
  EXPECT_EQ(nice_ceil(11), 20);
  EXPECT_EQ(nice_ceil(21), 50);
  EXPECT_EQ(nice_ceil(50), 50);
  EXPECT_EQ(nice_ceil(51), 100);
  const TimeBins b = TimeBins::nice(0, 10'500, 4'100, 1'000);
  EXPECT_EQ(b.width_ns, 2'000);
  EXPECT_EQ(b.count, 6u);
}

TEST(TimeBins, CoverFractionsOnTheAlignedAxis) {
  // Rank clock [0, 1500) and [2500, 3000), shifted by +1000: [1000, 2500), [3500, 4000).
  const IntervalSet set = IntervalSet::from_unsorted({{0, 1500}, {2500, 3000}});
  TimeBins bins;
  bins.begin_ns = 1000;
  bins.width_ns = 1000;
  bins.count = 4;
  std::vector<float> out;
  cover_fractions(set, 1000, bins, out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 0.5f);
  EXPECT_FLOAT_EQ(out[2], 0.5f);
  EXPECT_FLOAT_EQ(out[3], 0.0f);
}

TEST(UtilizationCurve, SawtoothDropsToZeroAtEveryStepBoundary) {
  // Every rank stalls 5 ms before each step (then a 0.5 ms memcpy): 5.5 of 20.5 ms without a
  // kernel, at the step boundary; 200 µs bins (a 20.5 ms step / 50, rounded down to 1-2-5).
  auto p = testing::sim_params(4, 2);
  for (auto& s : p.ranks) s.host_stall_ns = 5'000'000;
  const model::Report r = run(p);
  const json& u = r.json["utilization"];
  ASSERT_EQ(u["gpu_ranks"], 4);
  const json& w = u["window"];
  EXPECT_EQ(w["bin_us"], 200.0);
  EXPECT_EQ(w["first_step"], 1);
  EXPECT_EQ(w["last_step"], 12);
  EXPECT_EQ(w["rows"].size(), 4u);
  std::size_t checked = 0;
  for (const json& m : u["steps"]["window"]) {
    if (m["kind"] != "") continue;
    const std::vector<double> busy = in_step(w, m, "busy_pct");
    // 5.5 ms at 0 (27 bins; a bin or two shared with a kernel), the rest busy.
    EXPECT_GE(longest_run_at_most(busy, 0.0), 25u) << m.dump();
    EXPECT_LE(longest_run_at_most(busy, 0.0), 28u) << m.dump();
    EXPECT_EQ(*std::max_element(busy.begin(), busy.end()), 100.0) << m.dump();
    ++checked;
  }
  EXPECT_GE(checked, 10u);
  // nvidia-smi every 100 ms: the run is 12 x 20.5 ms = 246 ms, 2 whole samples, each the busy
  // share of its 100 ms (15 of 20.5 ms busy = 73 %, give or take where the window cuts); no
  // whole 1 s sample.
  ASSERT_EQ(u["sampled"].size(), 2u);
  EXPECT_EQ(u["sampled"][0]["period_ms"], 1000.0);
  EXPECT_EQ(u["sampled"][0]["bins"], 0);
  EXPECT_EQ(u["sampled"][1]["period_ms"], 100.0);
  ASSERT_EQ(u["sampled"][1]["bins"], 2);
  for (const json& v : u["sampled"][1]["busy_pct"]) {
    EXPECT_NEAR(v.get<double>(), 73.0, 6.0) << u["sampled"][1].dump();
  }
  // The sparkline: steps 2-5, the dip at every boundary (~4 of 15 chars per step at 0).
  const json& s = u["sparkline"];
  EXPECT_EQ(s["first_step"], 2);
  EXPECT_EQ(s["last_step"], 5);
  ASSERT_EQ(s["compute_pct"].size(), kSparklineChars);
  std::size_t zero = 0, full = 0;
  for (const json& v : s["compute_pct"]) {
    zero += v.get<double>() == 0.0;
    full += v.get<double>() >= 90.0;
  }
  EXPECT_GE(zero, 12u);
  EXPECT_GE(full, 30u);
}

TEST(UtilizationCurve, SparklineIsAttachedToThePatternFinding) {
  auto p = testing::sim_params(4, 2);
  for (auto& s : p.ranks) s.host_stall_ns = 5'000'000;
  const model::Report r = run(p);
  const model::Finding* f = nullptr;
  for (const auto& x : r.findings) {
    if (x.source == "pattern" && f == nullptr) f = &x;
  }
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->chart.size(), kSparklineChars);
  EXPECT_EQ(f->chart_label, "compute, steps 2-5 (median rank, 1 char = 1.4 ms):");
  const json& spark = r.json["utilization"]["sparkline"]["compute_pct"];
  for (std::size_t k = 0; k < kSparklineChars; ++k)
    EXPECT_NEAR(f->chart[k], spark[k].get<double>() / 100.0, 0.001) << k;
}

TEST(UtilizationCurve, CheckpointStepsAreMarkedAndOneIsInTheSparkline) {
  // Every rank stalls 20 ms every 4th step: the verdict's checkpoint steps are the marks.
  auto p = testing::sim_params(4, 2);
  for (auto& s : p.ranks) {
    s.spike_ns = 20'000'000;
    s.spike_every = 4;
  }
  const model::Report r = run(p);
  ASSERT_EQ(r.json["pattern"]["row"], "checkpoint") << r.json["pattern"].dump();
  const json& u = r.json["utilization"];
  std::vector<std::size_t> marked;
  for (const json& m : u["steps"]["marked"]) {
    if (m["kind"] == "checkpoint") marked.push_back(m["step"]);
  }
  EXPECT_EQ(json(marked), r.json["pattern"]["spike_steps"]);
  // The sparkline holds the first checkpoint step c: steps c-2 .. c+1. Its dip (20 ms, ~12
  // of the ~47 chars a 20 ms-longer step gets... at least 8) is the longest run at 0.
  const std::size_t c = marked.at(0);
  EXPECT_EQ(u["sparkline"]["first_step"], c - 2);
  EXPECT_EQ(u["sparkline"]["last_step"], c + 1);
  std::vector<double> spark;
  for (const json& v : u["sparkline"]["compute_pct"]) spark.push_back(v);
  EXPECT_GE(longest_run_at_most(spark, 0.0), 8u);
}

TEST(UtilizationCurve, RowsAreGroupedPastTheLimitAndTheStragglerIsHighlighted) {
  // 64 ranks, 8 per host; rank 13's GPU is 30 % slower: 32 rows of 2 ranks, row 6 holds it.
  auto p = testing::sim_params(64, 8);
  p.ranks[13].compute_scale = 1.3;
  p.steps = 8;
  const model::Report r = run(p);
  const json& w = r.json["utilization"]["window"];
  ASSERT_EQ(w["rows"].size(), kCurveMaxRows);
  EXPECT_TRUE(w["rows_aggregated"].get<bool>());
  for (std::size_t i = 0; i < kCurveMaxRows; ++i) {
    const json& row = w["rows"][i];
    EXPECT_EQ(row["ranks"], 2);
    EXPECT_EQ(row["first_rank"], 2 * i);
    EXPECT_EQ(row["straggler"].get<bool>(), i == 6) << row["label"];
  }
  EXPECT_EQ(w["rows"][6]["label"], "ranks 12-13");
}

TEST(UtilizationCurve, LongRunStaysBounded) {
  // 8 ranks x 300 steps: a 24-step window, at most 1000 overview bins, samples of 100 ms.
  auto p = testing::sim_params(8, 4);
  p.steps = 300;
  const model::Report r = run(p);
  const json& u = r.json["utilization"];
  const json& w = u["window"];
  EXPECT_EQ(w["last_step"].get<std::size_t>() - w["first_step"].get<std::size_t>() + 1,
            kCurveWindowSteps);
  EXPECT_EQ(w["first_step"], 2);  // from the first steady step
  EXPECT_EQ(w["total_steps"], 300);
  EXPECT_LE(w["bins"].get<std::size_t>(), 2 * kCurveWindowSteps * kCurveBinsPerStep);
  EXPECT_LE(u["overview"]["bins"].get<std::size_t>(), kCurveOverviewBins + 1);
  EXPECT_EQ(u["sampled"][1]["bins"], 46);  // 300 x 15.5 ms = 4.65 s
  EXPECT_EQ(u["sampled"][0]["bins"], 4);
  EXPECT_LT(u.dump().size(), 200'000u);
}

TEST(UtilizationCurve, HostOnlyJobHasNoCurveAndNoSparkline) {
  auto p = testing::sim_params(4, 2);
  p.host_only = true;
  const model::Report r = run(p);
  EXPECT_EQ(r.json["utilization"]["gpu_ranks"], 0);
  EXPECT_FALSE(r.json["utilization"].contains("window"));
  for (const auto& f : r.findings) EXPECT_TRUE(f.chart.empty()) << f.text;
}

TEST(UtilizationCurve, LastStepWithoutItsGapIsPartial) {
  // Step ranges pushed after the data loading (as `--nvtx` around the step body does): the
  // idle before a range belongs to the step before it, and the last step has none.
  auto p = testing::sim_params(4, 2);
  for (auto& s : p.ranks) s.host_stall_ns = 5'000'000;
  p.step_ranges = true;
  auto s = testing::simulate(p);
  for (auto& rank : s.job.ranks) {
    for (std::size_t k = 1; k < rank.ranges.size(); ++k) rank.ranges[k].start_ns += 5'000'000;
  }
  model::Report r;
  analyze(s.job, s.match, s.clocks, r);
  const json& marks = r.json["utilization"]["steps"]["marked"];
  ASSERT_FALSE(marks.empty());
  EXPECT_EQ(marks.back()["kind"], "partial");
  EXPECT_EQ(marks.back()["step"], 12);
  const json& last = r.json["breakdown"][0]["per_step"].back();
  EXPECT_TRUE(last.value("partial", false)) << last.dump();
  EXPECT_FALSE(r.json["breakdown"][0]["per_step"][5].contains("partial"));
}

// The lanes of one step: the state that covers most bins of a row.
std::map<std::string, std::size_t> bins_by_state(const json& row, const json& states) {
  std::map<std::string, std::size_t> out;
  for (const json& run : row["runs"])
    out[states[run[2].get<std::size_t>()]] += run[1].get<std::size_t>();
  return out;
}

TEST(StepSwimlane, TheStragglerStartsLateWhileItsPeersWait) {
  // Rank 1 stalls 3 ms before every step: it starts idle, the others wait for it in NCCL.
  auto p = testing::sim_params(4, 2);
  p.ranks[1].host_stall_ns = 3'000'000;
  const model::Report r = run(p);
  const json& u = r.json["utilization"];
  ASSERT_GE(u["swimlanes"].size(), 1u);
  const json& lane = u["swimlanes"][0];
  EXPECT_EQ(lane["why"], "representative");
  EXPECT_EQ(lane["bins"], kLaneBins);
  ASSERT_EQ(lane["rows"].size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    const json& row = lane["rows"][i];
    const auto by = bins_by_state(row, u["lane_states"]);
    std::size_t total = 0;
    for (const auto& [state, n] : by) total += n;
    EXPECT_EQ(total, kLaneBins);
    EXPECT_EQ(row["straggler"].get<bool>(), i == 1) << row.dump();
    std::size_t longest_idle = 0;
    for (const json& run : row["runs"]) {
      if (u["lane_states"][run[2].get<std::size_t>()] == "idle")
        longest_idle = std::max(longest_idle, run[1].get<std::size_t>());
    }
    if (i == 1) {
      // The stall, after the previous step's optimizer: 3 ms of an 18.5 ms window, ~39 bins.
      EXPECT_GE(longest_idle, 30u) << row.dump();
      EXPECT_EQ(by.count("wait"), 0u) << row.dump();
    } else {
      EXPECT_LT(longest_idle, 10u) << row.dump();
      EXPECT_GE(by.count("wait") ? by.at("wait") : 0, 10u) << row.dump();
    }
  }
}

TEST(StepSwimlane, RowsAreGroupedByHostPastTheLimit) {
  // 256 ranks; rank r on host r % 4 (round-robin): rows are in host order, 4 ranks each, never
  // mixing hosts.
  auto p = testing::sim_params(256, 64);
  for (std::size_t r = 0; r < p.ranks.size(); ++r) p.ranks[r].host = testing::host_name(r % 4);
  p.steps = 5;
  const model::Report r = run(p);
  const json& lane = r.json["utilization"]["swimlanes"][0];
  ASSERT_EQ(lane["rows"].size(), kMaxLaneRows);
  EXPECT_TRUE(lane["rows_aggregated"].get<bool>());
  std::vector<std::string> hosts;
  for (const json& row : lane["rows"]) {
    EXPECT_EQ(row["ranks"], 4);
    hosts.push_back(row["host"]);
  }
  EXPECT_TRUE(std::is_sorted(hosts.begin(), hosts.end())) << json(hosts).dump();
  EXPECT_EQ(lane["rows"][0]["first_rank"], 0);
  EXPECT_EQ(lane["rows"][0]["last_rank"], 12);
}

}  // namespace
}  // namespace ncclwatch::analysis

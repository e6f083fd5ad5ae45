// Stragglers with known answers on the DDP simulator: 4 ranks on 2 hosts (node-a: 0,1;
// node-b: 2,3), 12 steps, forward 5 ms, 4 x 2 ms backward segments, 1 ms all-reduces,
// 1 ms optimizer, 20 µs jitter on every kernel. Derivations in the comments.
#include <gtest/gtest.h>

#include <limits>

#include "analysis/analyze.h"
#include "analysis/arrivals.h"
#include "analysis/overlap.h"
#include "analysis/rank_activity.h"
#include "analysis/step_plan.h"
#include "analysis/straggler_stats.h"
#include "analysis/straggler_verdict.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

struct AnalyzedRun {
  model::Report report;
  nlohmann::json stragglers;
  explicit AnalyzedRun(const testing::SimParams& p) {
    const auto s = testing::simulate(p);
    analyze(s.job, s.match, s.clocks, report);
    stragglers = report.json["stragglers"];
  }
};

testing::SimParams base() {
  auto p = testing::sim_params(4, 2);
  p.jitter_ns = 20'000;
  return p;
}

double us(const nlohmann::json& j, const char* k) {
  return j[k].get<double>();
}

TEST(Stragglers, CleanRunReportsNone) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto p = base();
    p.seed = seed;
    p.jitter_ns = 50'000;
    const AnalyzedRun run(p);
    EXPECT_TRUE(run.stragglers.empty()) << run.stragglers.dump(1);
    EXPECT_EQ(run.report.findings.front().text.rfind("no straggler", 0), 0u)
        << run.report.findings.front().text;
  }
}

TEST(Stragglers, SlowGpuRank) {
  // Rank 2 computes 1.2x slower. Per step it starts 0.2 ms late (its optimizer), reaches
  // bucket 1 at +1.6 ms, and buckets 2-4 at +1.4 ms each (peers' all-reduces are queued
  // behind the previous late one): mean lateness vs the median rank = 1.45 ms.
  auto p = base();
  p.ranks[2].compute_scale = 1.2;
  const AnalyzedRun run(p);
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  const auto& s = run.stragglers[0];
  EXPECT_EQ(s["rank"], 2);
  EXPECT_EQ(s["host"], "node-b");
  EXPECT_EQ(s["cause"], "gpu-slow");
  EXPECT_EQ(s["pattern"], "persistent");
  EXPECT_GE(us(s, "arrived_last_pct"), 95.0);
  EXPECT_NEAR(us(s, "mean_lateness_us"), 1450.0, 150.0);
  EXPECT_NE(s["evidence"].get<std::string>().find("compute"), std::string::npos);
}

TEST(Stragglers, HostStalledRank) {
  // Rank 1 stalls 3 ms before every step. Bucket 1: +3 ms; buckets 2-4: +1 ms (peers queue
  // behind bucket 1, which ended 1 ms after rank 1 arrived): mean lateness 1.5 ms. Inflicted
  // wait per step = 3 x 3 ms + 3 x (3 x 1 ms) = 18 ms; 12 steps -> 216 ms.
  auto p = base();
  p.ranks[1].host_stall_ns = 3'000'000;
  const AnalyzedRun run(p);
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  const auto& s = run.stragglers[0];
  EXPECT_EQ(s["rank"], 1);
  EXPECT_EQ(s["cause"], "host-stall");
  EXPECT_GE(us(s, "arrived_last_pct"), 95.0);
  EXPECT_NEAR(us(s, "mean_lateness_us"), 1500.0, 100.0);
  EXPECT_NEAR(us(s, "inflicted_wait_us"), 216000.0, 216000.0 * 0.05);
  EXPECT_EQ(run.report.json["straggler_analysis"]["timestamps"], "gpu_kernel_start");
}

TEST(Stragglers, ClockSkewIsUndoneByTheAlignment) {
  auto p = base();
  p.ranks[1].host_stall_ns = 3'000'000;
  p.ranks[3].clock_skew_ns = 5'000'000'000;  // would make rank 3 look 5 s late, unaligned
  p.ranks[0].clock_skew_ns = -3'000'000'000;
  const AnalyzedRun run(p);
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  EXPECT_EQ(run.stragglers[0]["rank"], 1);
  EXPECT_NEAR(us(run.stragglers[0], "mean_lateness_us"), 1500.0, 100.0);
}

TEST(Stragglers, WholeSlowNode) {
  // Both ranks of node-b stall 3 ms. The median of 4 arrivals sits halfway: node-b ranks are
  // +1.5 ms at bucket 1 and +0.5 ms at buckets 2-4 (mean 0.75 ms); node-b's latest rank beats
  // node-a's by > 1 ms in every instance -> node problem.
  auto p = base();
  p.ranks[2].host_stall_ns = 3'000'000;
  p.ranks[3].host_stall_ns = 3'000'000;
  const AnalyzedRun run(p);
  const auto& nodes = run.report.json["straggler_analysis"]["node_problems"];
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["host"], "node-b");
  EXPECT_EQ(nodes[0]["ranks"], nlohmann::json({2, 3}));
  EXPECT_GE(us(nodes[0], "arrived_last_pct"), 95.0);
  ASSERT_EQ(run.stragglers.size(), 2u) << run.stragglers.dump(1);
  for (const auto& s : run.stragglers) {
    EXPECT_EQ(s["host"], "node-b");
    EXPECT_TRUE(s["node_problem"].get<bool>());
    EXPECT_EQ(s["cause"], "host-stall");
    EXPECT_NEAR(us(s, "mean_lateness_us"), 750.0, 100.0);
  }
  EXPECT_EQ(run.report.findings.front().text.rfind(
                "node node-b (ranks 2, 3) is 1.5 ms late at the first all-reduce of every step", 0),
            0u)
      << run.report.findings.front().text;
}

TEST(Stragglers, PeriodicSpikeEveryTenthStep) {
  // Rank 3 stalls 20 ms on steps 10, 20, 30, 40 (checkpointing): late by 20 ms at bucket 1
  // of those steps only; arrived last ~32% (10% + 90% x fair 25%) is no persistent straggler.
  auto p = base();
  p.steps = 40;
  p.ranks[3].spike_every = 10;
  p.ranks[3].spike_ns = 20'000'000;
  const AnalyzedRun run(p);
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  const auto& s = run.stragglers[0];
  EXPECT_EQ(s["rank"], 3);
  EXPECT_EQ(s["pattern"], "periodic");
  EXPECT_EQ(s["period_steps"], 10);
  EXPECT_EQ(s["spike_steps"], nlohmann::json({10, 20, 30, 40}));
  EXPECT_NEAR(us(s, "spike_lateness_us"), 20000.0, 200.0);
  EXPECT_EQ(s["cause"], "host-stall");
  EXPECT_LT(us(s, "arrived_last_pct"), 50.0);
  // The spikes do not disturb step detection: 40 steps, 39 after warm-up, on every rank.
  for (int r = 0; r < 4; ++r) EXPECT_EQ(run.report.json["overlap"][r]["steps"], 39);
}

TEST(Stragglers, PeriodicSpikeAmongAnotherSpike) {
  // Checkpoints at steps 10, 20, 30, 40 plus one extra stall at step 25: still "every 10th"
  // (every 5th would miss 3 of its 7 positions); step 25 is listed as a one-off.
  auto p = base();
  p.steps = 40;
  p.ranks[3].spike_every = 10;
  p.ranks[3].spike_ns = 20'000'000;
  p.ranks[3].extra_spike_step = 24;
  const AnalyzedRun run(p);
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  EXPECT_EQ(run.stragglers[0]["period_steps"], 10);
  EXPECT_EQ(run.stragglers[0]["spike_steps"], nlohmann::json({10, 20, 30, 40}));
  bool listed = false;
  for (const auto& sec : run.report.sections) {
    listed = listed || sec.body.find("rank 3 step 25: +20.0 ms") != std::string::npos;
  }
  EXPECT_TRUE(listed);
}

TEST(Stragglers, OneOffSpikeIsNotAStraggler) {
  auto p = base();
  p.ranks[0].spike_every = 7;  // 12 steps: only step 7
  p.ranks[0].spike_ns = 20'000'000;
  const AnalyzedRun run(p);
  EXPECT_TRUE(run.stragglers.empty()) << run.stragglers.dump(1);
  bool listed = false;
  for (const auto& sec : run.report.sections) {
    listed = listed || sec.body.find("rank 0 step 7: +20.0 ms") != std::string::npos;
  }
  EXPECT_TRUE(listed);
}

TEST(Stragglers, HostOnlyRecordsUseCallEntries) {
  // No GPU records: arrival = call entry (kernel start - 40 µs on every rank, so the same
  // order and the same 1.5 ms mean lateness); the cause cannot be told without GPU timing.
  auto p = base();
  p.host_only = true;
  p.ranks[1].host_stall_ns = 3'000'000;
  const AnalyzedRun run(p);
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  EXPECT_EQ(run.stragglers[0]["rank"], 1);
  EXPECT_EQ(run.stragglers[0]["cause"], "unknown");
  EXPECT_NEAR(us(run.stragglers[0], "mean_lateness_us"), 1500.0, 100.0);
  EXPECT_EQ(run.report.json["straggler_analysis"]["timestamps"], "call_entry");
  EXPECT_TRUE(run.report.json["overlap"][0]["overlap_pct"].is_null());
  bool says = false;
  for (const auto& f : run.report.findings)
    says = says || f.text.find("host-only") != std::string::npos;
  EXPECT_TRUE(says);
}

TEST(Stragglers, LiteModeHasArrivalsButNoCause) {
  auto p = base();
  p.lite = true;
  p.ranks[1].host_stall_ns = 3'000'000;
  const AnalyzedRun run(p);
  ASSERT_EQ(run.stragglers.size(), 1u);
  EXPECT_EQ(run.stragglers[0]["rank"], 1);
  EXPECT_EQ(run.stragglers[0]["cause"], "unknown");
  EXPECT_EQ(run.report.json["straggler_analysis"]["timestamps"], "gpu_kernel_start");
  EXPECT_TRUE(run.report.json["overlap"][1]["overlap_pct"].is_null());
  // Peers of the stalled rank wait for it inside their all-reduces (known from GPU intervals).
  EXPECT_GT(run.report.json["overlap"][0]["wait_us"].get<double>(), 0.0);
}

TEST(Arrivals, TiesAreNobodysFaultAndMalformedInstancesAreSkipped) {
  model::JobTrace job;
  job.ranks.resize(2);
  for (auto& r : job.ranks) {
    model::CallEvent c;
    c.func = format::Func::kAllReduce;
    c.enter_ns = 1000;
    r.calls.push_back(c);
  }
  job.ranks[1].calls[0].enter_ns = 1001;  // within the tie epsilon
  model::MatchResult m;
  m.members = {{0, 0}, {1, 0}, {1, 5}};
  m.instances.push_back({1, 0, format::Func::kAllReduce, 4, 0, 2, 2});
  m.instances.push_back({1, 1, format::Func::kAllReduce, 4, 1, 2, 2});  // call index 5: bad
  m.instances.push_back({1, 2, format::Func::kAllReduce, 4, 2, 9, 9});  // past members: bad
  const Arrivals a = Arrivals::of(job, m, {}, 2000);
  EXPECT_TRUE(a.instances[0].used);
  EXPECT_EQ(a.instances[0].last_member, -1);
  EXPECT_FALSE(a.instances[0].gpu);
  EXPECT_FALSE(a.instances[1].used);
  EXPECT_FALSE(a.instances[2].used);
  EXPECT_EQ(a.host_instances, 1u);
}

TEST(Arrivals, TimestampsNearInt64LimitsSaturateInsteadOfOverflowing) {
  // A corrupt record (or a wild clock offset) puts arrivals at both ends of int64: lateness
  // and waits clamp to the int64 range (no signed overflow, no "-2305843009 s").
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  model::JobTrace job;
  job.ranks.resize(3);
  const int64_t enters[3] = {kMax - 10, kMin + 10, 0};
  for (std::size_t r = 0; r < 3; ++r) {
    model::CallEvent c;
    c.func = format::Func::kAllReduce;
    c.enter_ns = enters[r];
    job.ranks[r].calls.push_back(c);
  }
  model::MatchResult m;
  m.members = {{0, 0}, {1, 0}, {2, 0}};
  m.instances.push_back({1, 0, format::Func::kAllReduce, 4, 0, 3, 3});
  model::ClockAlignment clocks;
  clocks.rank_offset_ns = {kMax / 2, kMin / 2, 0};  // pushes rank 0 past kMax, rank 1 past kMin
  const Arrivals a = Arrivals::of(job, m, clocks, 2000);
  ASSERT_TRUE(a.instances[0].used);
  EXPECT_EQ(a.member_ns[0], kMax);
  EXPECT_EQ(a.member_ns[1], kMin);
  EXPECT_EQ(a.instances[0].median_ns, 0);
  EXPECT_EQ(a.instances[0].last_member, 0);
  const ArrivalStats st = ArrivalStats::of(job, m, a, {});
  EXPECT_EQ(st.ranks[0].lateness_sum_ns, kMax);
  EXPECT_EQ(st.ranks[1].lateness_sum_ns, kMin);
  // The waits (≈ 2^64 ns) exceed int64: the caused wait clamps near kMax, never wraps negative.
  EXPECT_GE(st.ranks[0].inflicted_wait_ns, 9'000'000'000'000'000'000);
  EXPECT_EQ(st.ranks[1].inflicted_wait_ns, 0);  // first to arrive: caused nobody a wait
  EXPECT_GT(st.ranks[0].mean_lateness_ns(), 0.0);
  // Two members only: the median is the midpoint of the extremes, computed without overflow.
  m.instances[0].nmembers = 2;
  const Arrivals two = Arrivals::of(job, m, clocks, 2000);
  EXPECT_EQ(two.instances[0].median_ns, -1);  // floor((kMax + kMin) / 2)
  // The verdict on such a job names nobody it cannot measure, and does not crash.
  m.instances[0].nmembers = 3;
  const StragglerResult r = StragglerResult::of(job, m, clocks, a, {});
  EXPECT_LE(r.stragglers.size(), 1u);
}

// Each rank's inflicted waits are summed by the instance chunks of ArrivalStats::of's first pass
// as they go, on whichever worker: the sums (per rank and per step) must not depend on the
// worker count.
TEST(ArrivalStats, InflictedWaitsDoNotDependOnTheWorkers) {
  auto p = base();
  p.steps = 40;
  p.ranks[2].compute_scale = 1.2;
  p.ranks[1].spike_every = 3;
  p.ranks[1].spike_ns = 2'000'000;
  const auto s = testing::simulate(p);
  const Arrivals a = Arrivals::of(s.job, s.match, s.clocks, 2000);
  const std::vector<IntervalSet> waits = peer_wait_sets(s.job, s.match, s.clocks, a);
  std::vector<RankOverlap> overlaps;
  for (std::size_t i = 0; i < s.job.ranks.size(); ++i) {
    const RankActivity act = RankActivity::of(s.job.ranks[i]);
    overlaps.push_back(OverlapAnalysis::of_rank(
        s.job.ranks[i], i, act, StepDetector::detect(s.job.ranks[i], act.first_ns, act.last_ns),
        waits[i]));
  }
  const ArrivalStats one = ArrivalStats::of(s.job, s.match, a, overlaps, 1);
  ASSERT_GT(one.ranks[2].exposed_inflicted_ns, 0);
  for (unsigned workers : {2u, 3u, 7u}) {
    const ArrivalStats many = ArrivalStats::of(s.job, s.match, a, overlaps, workers);
    for (std::size_t r = 0; r < one.ranks.size(); ++r) {
      EXPECT_EQ(many.ranks[r].inflicted_wait_ns, one.ranks[r].inflicted_wait_ns) << r;
      EXPECT_EQ(many.ranks[r].exposed_inflicted_ns, one.ranks[r].exposed_inflicted_ns) << r;
      EXPECT_EQ(many.ranks[r].step_exposed_inflicted_ns, one.ranks[r].step_exposed_inflicted_ns)
          << r;
    }
  }
}

TEST(ArrivalStats, InflictedWaitSaturatesAcrossChunks) {
  // Eight instances whose last rank each inflicts ~2^63 ns: the sum clamps at INT64_MAX whatever
  // chunks (workers) the instances were summed in, and whichever order those sums came in.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  model::JobTrace job;
  job.ranks.resize(3);
  model::MatchResult m;
  for (uint32_t k = 0; k < 8; ++k) {
    const int64_t enters[3] = {kMax - 10, kMin + 10, 0};
    for (uint32_t r = 0; r < 3; ++r) {
      model::CallEvent c;
      c.func = format::Func::kAllReduce;
      c.enter_ns = enters[r];
      job.ranks[r].calls.push_back(c);
      m.members.push_back({r, k});
    }
    m.instances.push_back({1, k, format::Func::kAllReduce, 4, 3 * k, 3, 3});
  }
  model::ClockAlignment clocks;
  clocks.rank_offset_ns = {0, 0, 0};
  const Arrivals a = Arrivals::of(job, m, clocks, 2000);
  for (unsigned workers : {1u, 2u, 8u}) {
    const ArrivalStats st = ArrivalStats::of(job, m, a, {}, workers);
    EXPECT_EQ(st.ranks[0].inflicted_wait_ns, kMax) << workers;
    EXPECT_EQ(st.ranks[1].inflicted_wait_ns, 0) << workers;
  }
}

}  // namespace
}  // namespace ncclwatch::analysis

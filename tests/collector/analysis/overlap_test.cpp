// Overlap with known answers: hand-built kernels for the definition's edge cases, then the DDP
// simulator where every figure follows from its knobs (derivations in the comments).
#include "analysis/overlap.h"

#include <cmath>

#include <gtest/gtest.h>

#include "analysis/analyze.h"
#include "analysis/arrivals.h"
#include "analysis/bucket_table.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

using format::ActivityKind;

void kernel(model::RankTrace& r, int64_t b, int64_t e, bool nccl,
            ActivityKind kind = ActivityKind::kKernel) {
  model::KernelEvent k;
  k.start_ns = b;
  k.end_ns = e;
  k.nccl = nccl;
  k.kind = kind;
  r.kernels.push_back(k);
}

TEST(OverlapFraction, FullOverlap) {
  model::RankTrace r;
  kernel(r, 0, 100, false);
  kernel(r, 10, 60, true);  // all-reduce entirely under compute
  EXPECT_DOUBLE_EQ(overlap_fraction(r), 1.0);
}

TEST(OverlapFraction, NoOverlapWhenAllReduceFollowsBackward) {
  model::RankTrace r;
  kernel(r, 0, 100, false);
  kernel(r, 100, 150, true);  // touches, shares no time
  EXPECT_DOUBLE_EQ(overlap_fraction(r), 0.0);
}

TEST(OverlapFraction, PartialOverlapAndMemcpyIsNotCompute) {
  model::RankTrace r;
  kernel(r, 0, 100, false);
  kernel(r, 80, 140, true);
  kernel(r, 100, 120, false, ActivityKind::kMemcpy);  // neither comm nor compute
  kernel(r, 120, 200, false);
  // comm [80,140) = 60; under compute: [80,100) + [120,140) = 40 -> 2/3.
  EXPECT_DOUBLE_EQ(overlap_fraction(r), 40.0 / 60.0);
  // Windows: [0,90): comm [80,90) all overlapped; [100,130): comm 30, overlapped [120,130) = 10.
  EXPECT_DOUBLE_EQ(overlap_fraction(r, 0, 90), 1.0);
  EXPECT_DOUBLE_EQ(overlap_fraction(r, 100, 130), 10.0 / 30.0);
  EXPECT_TRUE(std::isnan(overlap_fraction(r, 0, 50)));  // no comm in the window
}

TEST(OverlapFraction, LiteModeUsesCollectiveGpuIntervals) {
  model::RankTrace r;
  kernel(r, 0, 100, false);
  kernel(r, 120, 200, false);
  model::CallEvent c;
  c.func = format::Func::kAllReduce;
  c.gpu_start_ns = 80;
  c.gpu_end_ns = 140;
  r.calls.push_back(c);
  EXPECT_DOUBLE_EQ(overlap_fraction(r), 40.0 / 60.0);
  EXPECT_EQ(RankActivity::of(r).source, CommSource::kCallEvents);
}

TEST(OverlapAnalysis, ExposedSplitsIntoWaitAndTransferAcrossSkewedClocks) {
  // Rank 0's all-reduce kernel [100,200); rank 1 arrives at 150 but its clock reads +1000,
  // which the alignment undoes. No compute: everything is exposed. Rank 0 waits [100,150) = 50
  // and transfers 50; rank 1 waits 0 and transfers 50.
  model::JobTrace job;
  job.ranks.resize(2);
  const int64_t b[2] = {100, 1150}, e[2] = {200, 1200};
  model::MatchResult match;
  match.instances.push_back({7, 0, format::Func::kAllReduce, 64, 0, 2, 2});
  for (int i = 0; i < 2; ++i) {
    model::CallEvent c;
    c.func = format::Func::kAllReduce;
    c.enter_ns = b[i] - 10;
    c.gpu_start_ns = b[i];
    c.gpu_end_ns = e[i];
    job.ranks[i].calls.push_back(c);
    job.ranks[i].info.rank = i;
    kernel(job.ranks[i], b[i], e[i], true);
    match.members.push_back({static_cast<uint32_t>(i), 0});
  }
  model::ClockAlignment clocks;
  clocks.rank_offset_ns = {0, -1000};
  const Arrivals arr = Arrivals::of(job, match, clocks, 2);
  EXPECT_EQ(arr.instances[0].last_member, 1);
  const auto waits = peer_wait_sets(job, match, clocks, arr);
  const int64_t expect_wait[2] = {50, 0};
  for (std::size_t i = 0; i < 2; ++i) {
    const RankActivity a = RankActivity::of(job.ranks[i]);
    const RankOverlap o =
        OverlapAnalysis::of_rank(job.ranks[i], i, a, StepPlan{{}, 0, "", {}, {0, 2000}}, waits[i]);
    EXPECT_EQ(o.steady.comm_ns, e[i] - b[i]);
    EXPECT_EQ(o.steady.exposed_ns, e[i] - b[i]);
    EXPECT_EQ(o.steady.wait_ns, expect_wait[i]);
    EXPECT_EQ(o.steady.transfer_ns(), 50);
    EXPECT_FALSE(o.measurable);  // no compute kernels: overlap is not claimed
  }
}

TEST(OverlapAnalysis, BusyIdleAndIdleRightBeforeACollective) {
  model::RankTrace r;
  kernel(r, 0, 100, false);
  kernel(r, 150, 200, true);  // GPU idle [100,150) right before the all-reduce
  const RankActivity a = RankActivity::of(r);
  const RankOverlap o = OverlapAnalysis::of_rank(r, 0, a, StepPlan{{}, 0, "", {}, {0, 200}}, {});
  EXPECT_EQ(o.steady.busy_ns, 150);
  EXPECT_EQ(o.steady.idle_ns(), 50);
  EXPECT_EQ(o.steady.idle_before_comm_ns, 50);
  EXPECT_DOUBLE_EQ(o.busy_pct(), 75.0);
}

// Simulator: forward 5 ms, 4 backward segments of 2 ms each releasing a 25 MiB bucket,
// all-reduce 1 ms once all ranks are there, optimizer 1 ms, input memcpy 0.5 ms.
struct Sim {
  model::Report report;
  explicit Sim(const testing::SimParams& p) {
    const auto s = testing::simulate(p);
    analyze(s.job, s.match, s.clocks, report);
  }
  const nlohmann::json& rank(int i) const { return report.json["overlap"][i]; }
};

TEST(OverlapScenario, BucketedAllReduceHidesAllButTheLastBucket) {
  // Buckets 1-3 run 1 ms each under the next backward segment (2 ms); bucket 4 is ready when
  // backward ends and runs alone: comm 4 ms/step, 3 ms overlapped -> 75%, exposed 1 ms/step,
  // all transfer (ranks arrive together). Step = 0.5 + 5 + 8 + 1 + 1 = 15.5 ms, GPU 100% busy.
  auto p = testing::sim_params(4, 2);
  const Sim sim(p);
  for (int i = 0; i < 4; ++i) {
    const auto& o = sim.rank(i);
    EXPECT_EQ(o["steps"], 11);  // 12 steps, first dropped as warm-up
    EXPECT_NEAR(o["overlap_pct"].get<double>(), 75.0, 1e-9);
    EXPECT_NEAR(o["comm_us"].get<double>(), 11 * 4000.0, 1e-6);
    EXPECT_NEAR(o["exposed_us"].get<double>(), 11 * 1000.0, 1e-6);
    EXPECT_NEAR(o["wait_us"].get<double>(), 0.0, 1e-6);
    EXPECT_NEAR(o["transfer_us"].get<double>(), 11 * 1000.0, 1e-6);
    EXPECT_NEAR(o["busy_pct"].get<double>(), 100.0, 1e-9);
  }
  const auto& b = sim.report.json["buckets"];
  ASSERT_EQ(b.size(), 4u);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(b[k]["overlap_pct"].get<double>(), 100.0, 1e-9);
  EXPECT_NEAR(b[3]["overlap_pct"].get<double>(), 0.0, 1e-9);
  EXPECT_NEAR(b[3]["exposed_us_per_step"].get<double>(), 1000.0, 1e-6);
  EXPECT_EQ(b[0]["bytes"], 25u << 20);
}

TEST(OverlapScenario, AllReduceAfterBackwardIsNotOverlapped) {
  auto p = testing::sim_params(4, 2);
  p.after_backward = true;
  const Sim sim(p);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(sim.rank(i)["overlap_pct"].get<double>(), 0.0, 1e-9);
    EXPECT_NEAR(sim.rank(i)["exposed_us"].get<double>(), 11 * 4000.0, 1e-6);
  }
  EXPECT_NE(
      sim.report.findings.back().text.find("all-reduce is only 0% overlapped; 4.0 ms/step exposed"),
      std::string::npos)
      << sim.report.findings.back().text;
}

TEST(OverlapScenario, PartialOverlapComputedByHand) {
  // Transfer 3 ms. With F = end of forward: AR1 [F+2,F+5] under segments 2-3; AR2 ready at F+4
  // but queued behind AR1: [F+5,F+8] under segments 3-4; backward ends at F+8, so AR3
  // [F+8,F+11] and AR4 [F+11,F+14] are exposed. 6 of 12 ms overlapped -> 50%, 6 ms/step exposed.
  auto p = testing::sim_params(2, 1);
  p.transfer_ns = 3'000'000;
  const Sim sim(p);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(sim.rank(i)["overlap_pct"].get<double>(), 50.0, 1e-9);
    EXPECT_NEAR(sim.rank(i)["exposed_us"].get<double>(), 11 * 6000.0, 1e-6);
  }
}

TEST(OverlapScenario, JitterKeepsTheFigureWithinTolerance) {
  // Kernel durations jitter by up to 50 µs: the 75% case moves by well under one point.
  auto p = testing::sim_params(4, 2);
  p.jitter_ns = 50'000;
  const Sim sim(p);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(sim.rank(i)["overlap_pct"].get<double>(), 75.0, 1.0);
}

}  // namespace
}  // namespace ncclwatch::analysis

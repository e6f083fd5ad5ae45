// Step-time breakdown on the DDP simulator (every part derived by hand from its knobs) and on
// hand-built timelines for the idle split.
#include <gtest/gtest.h>

#include "analysis/analyze.h"
#include "analysis/arrivals.h"
#include "analysis/rank_activity.h"
#include "analysis/step_breakdown.h"
#include "analysis/step_breakdown_report.h"
#include "analysis/step_plan.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

std::vector<RankBreakdown> breakdowns(const testing::SimJob& s) {
  const Arrivals arrivals = Arrivals::of(s.job, s.match, s.clocks, default_tie_ns(s.clocks));
  const std::vector<IntervalSet> waits = peer_wait_sets(s.job, s.match, s.clocks, arrivals);
  std::vector<RankBreakdown> out;
  for (std::size_t i = 0; i < s.job.ranks.size(); ++i) {
    const RankActivity a = RankActivity::of(s.job.ranks[i]);
    const StepPlan plan = StepDetector::detect(s.job.ranks[i], a.first_ns, a.last_ns);
    out.push_back(StepBreakdownAnalysis::of_rank(s.job.ranks[i], i, a, plan, waits[i]));
  }
  return out;
}

int64_t parts(const StepTimes& t) {
  return t.compute_ns + t.exposed_wait_ns + t.exposed_transfer_ns + t.memcpy_ns + t.idle_ns();
}

double per_step(int64_t ns, const RankBreakdown& r) {
  return static_cast<double>(ns) / static_cast<double>(r.steady_steps);
}

TEST(StepBreakdown, PartsAddUpAndMatchTheSimulator) {
  // Step = optimizer 1 + memcpy 0.5 + forward 5 + backward 4 x 2 + last all-reduce 1 = 15.5 ms;
  // the first three all-reduces (1 ms) hide under the next 2 ms backward segment.
  const auto s = testing::simulate(testing::sim_params(2, 1));
  for (const RankBreakdown& r : breakdowns(s)) {
    ASSERT_EQ(r.basis, BreakdownBasis::kGpu);
    ASSERT_TRUE(r.steps_found);
    EXPECT_EQ(r.steady_steps, 11u);
    for (const StepBreakdown& st : r.steps) EXPECT_EQ(parts(st.times), st.times.step_ns);
    EXPECT_NEAR(per_step(r.steady.step_ns, r), 15.5e6, 1e3);
    EXPECT_NEAR(per_step(r.steady.compute_ns, r), 14e6, 1e3);
    EXPECT_NEAR(per_step(r.steady.memcpy_ns, r), 0.5e6, 1e3);
    EXPECT_NEAR(per_step(r.steady.comm_overlapped_ns, r), 3e6, 1e3);
    EXPECT_NEAR(per_step(r.steady.exposed_transfer_ns, r), 1e6, 1e3);
    EXPECT_NEAR(per_step(r.steady.exposed_wait_ns, r), 0, 1e3);
    EXPECT_NEAR(per_step(r.steady.idle_ns(), r), 0, 1e3);
    EXPECT_NEAR(r.smi_pct(), 100.0 * 15 / 15.5, 0.01);
    EXPECT_NEAR(r.useful_pct(), 100.0 * 14 / 15.5, 0.01);
    EXPECT_NEAR(per_step(r.steady.kernels, r), 6, 1e-9);  // forward, 4 segments, optimizer
  }
}

TEST(StepBreakdown, HostStallIsIdleAtTheStepBoundary) {
  auto p = testing::sim_params(2, 1);
  for (auto& r : p.ranks) r.host_stall_ns = 3'000'000;
  for (bool ranges : {false, true}) {
    p.step_ranges = ranges;
    for (const RankBreakdown& r : breakdowns(testing::simulate(p))) {
      EXPECT_NEAR(per_step(r.steady.step_ns, r), 18.5e6, 1e3) << ranges;
      EXPECT_NEAR(per_step(r.steady.idle_step_boundary_ns, r), 3e6, 1e3) << ranges;
      EXPECT_NEAR(per_step(r.steady.idle_other_ns + r.steady.idle_before_comm_ns, r), 0, 1e3);
    }
  }
}

TEST(StepBreakdown, LateRankMakesItsPeersWaitInsideNccl) {
  // Rank 1 stalls 3 ms: rank 0 waits inside every all-reduce (3 ms each), which pushes its
  // chain back: its exposed 3 + 1 ms are all waiting by the overlap rule wait = min(peer wait,
  // exposed) — busy for nvidia-smi, not useful.
  auto p = testing::sim_params(2, 1);
  p.ranks[1].host_stall_ns = 3'000'000;
  const auto b = breakdowns(testing::simulate(p));
  EXPECT_NEAR(per_step(b[0].steady.exposed_wait_ns, b[0]), 4e6, 1e4);
  EXPECT_NEAR(per_step(b[0].steady.exposed_transfer_ns, b[0]), 0, 1e4);
  EXPECT_NEAR(per_step(b[0].steady.idle_ns(), b[0]), 0, 1e3);
  EXPECT_NEAR(per_step(b[1].steady.idle_step_boundary_ns, b[1]), 3e6, 1e3);
  EXPECT_GT(b[0].smi_pct(), 95.0);
  EXPECT_LT(b[0].useful_pct(), 80.0);
}

TEST(StepBreakdown, HostOnlyRecordsSplitOnTheHost) {
  auto p = testing::sim_params(2, 1);
  p.host_only = true;
  for (const RankBreakdown& r : breakdowns(testing::simulate(p))) {
    EXPECT_EQ(r.basis, BreakdownBasis::kHost);
    // 4 calls of 5 µs per step.
    EXPECT_NEAR(per_step(r.steady.host_in_nccl_ns, r), 20e3, 1);
    EXPECT_EQ(r.steady.host_in_nccl_ns + r.steady.host_between_ns, r.steady.step_ns);
    EXPECT_EQ(r.steady.compute_ns, 0);
  }
}

TEST(StepBreakdown, IdleSplitOnAHandBuiltTimeline) {
  // One window (no steps): compute [0,10), comm [15,20), compute [22,30), compute [31,40).
  // [10,15) ends at a collective: before comm. [20,22) is the longest other gap: boundary.
  // [30,31): other.
  model::RankTrace t;
  auto k = [&](int64_t b, int64_t e, bool nccl) {
    model::KernelEvent ke;
    ke.start_ns = b;
    ke.end_ns = e;
    ke.nccl = nccl;
    t.kernels.push_back(ke);
  };
  k(0, 10, false);
  k(15, 20, true);
  k(22, 30, false);
  k(31, 40, false);
  const RankActivity a = RankActivity::of(t);
  StepPlan plan;
  plan.steady = {0, 40};
  const RankBreakdown r = StepBreakdownAnalysis::of_rank(t, 0, a, plan, IntervalSet{});
  ASSERT_EQ(r.steps.size(), 1u);
  const StepTimes& s = r.steady;
  EXPECT_FALSE(r.steps_found);
  EXPECT_EQ(s.step_ns, 40);
  EXPECT_EQ(s.compute_ns, 27);
  EXPECT_EQ(s.exposed_transfer_ns, 5);
  EXPECT_EQ(s.idle_before_comm_ns, 5);
  EXPECT_EQ(s.idle_step_boundary_ns, 2);
  EXPECT_EQ(s.idle_other_ns, 1);
}

TEST(StepBreakdown, ReportSectionAndJson) {
  auto p = testing::sim_params(2, 1);
  const auto s = testing::simulate(p);
  model::Report r;
  analyze(s.job, s.match, s.clocks, r);
  const auto& b = r.json.at("breakdown");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0]["basis"], "gpu");
  EXPECT_EQ(b[0]["steps"], 11);
  EXPECT_NEAR(b[0]["compute_us"].get<double>(), 14'000, 1);
  EXPECT_NEAR(b[0]["smi_util_pct"].get<double>(), 100.0 * 15 / 15.5, 0.01);
  ASSERT_EQ(b[0]["per_step"].size(), 12u);
  EXPECT_TRUE(b[0]["per_step"][0]["warmup"].get<bool>());
  EXPECT_EQ(b[0]["per_step"][1]["step"], 2);
  EXPECT_NEAR(r.json["breakdown_analysis"]["useful_compute_pct"].get<double>(), 100.0 * 14 / 15.5,
              0.01);
  bool found = false;
  for (const auto& sec : r.sections) found = found || sec.title == "Step breakdown";
  EXPECT_TRUE(found);
}

// One GPU-timed rank with `steps` steps (step 1 warm-up) of 1 ms, step k's compute k µs, and a
// 5 ms checkpoint in step `spike`.
RankBreakdown long_rank(std::size_t steps, std::size_t spike) {
  RankBreakdown r;
  r.basis = BreakdownBasis::kGpu;
  for (std::size_t k = 0; k < steps; ++k) {
    StepBreakdown s;
    s.index = k;
    s.warmup = k == 0;
    s.times.step_ns = k + 1 == spike ? 5'000'000 : 1'000'000;
    s.times.compute_ns = static_cast<int64_t>(k + 1) * 1000;
    r.steps.push_back(s);
  }
  return r;
}

TEST(StepBreakdownReport, PerStepIsBoundedForBigJobs) {
  // The rule: 65 536 entries over the job, 16..1000 per rank.
  EXPECT_EQ(StepBreakdownReport::per_step_limit(8), 1000u);
  EXPECT_EQ(StepBreakdownReport::per_step_limit(256), 256u);
  EXPECT_EQ(StepBreakdownReport::per_step_limit(4096), 16u);
  EXPECT_EQ(StepBreakdownReport::per_step_limit(100'000), 16u);
  // 4096 ranks x 10 000 steps: 16 entries per rank, 65 536 in all.
  const RankBreakdown r = long_rank(10'000, 5000);
  const nlohmann::json ps = StepBreakdownReport::per_step_json(r, 16);
  ASSERT_EQ(ps.size(), 16u);
  // The warm-up step on its own, then 15 groups of 666-667 steady steps covering 2..10 000.
  EXPECT_EQ(ps[0]["step"], 1);
  EXPECT_EQ(ps[0]["last_step"], 1);
  EXPECT_TRUE(ps[0]["warmup"].get<bool>());
  std::size_t next = 2, covered = 0;
  double compute_us = 0;
  for (std::size_t e = 1; e < ps.size(); ++e) {
    EXPECT_EQ(ps[e]["step"], next);
    const std::size_t n = ps[e]["merged_steps"];
    EXPECT_TRUE(n == 666 || n == 667) << n;
    EXPECT_EQ(ps[e]["last_step"], next + n - 1);
    next += n;
    covered += n;
    compute_us += ps[e]["compute_us"].get<double>() * static_cast<double>(n);
  }
  EXPECT_EQ(covered, 9999u);
  // Means per step: the sum over the steady steps survives (2 + ... + 10 000 µs).
  EXPECT_NEAR(compute_us, 10'000.0 * 10'001 / 2 - 1, 1e-3);
  // The checkpoint step's 5 ms is kept as the group's longest step.
  std::size_t with_spike = 0;
  for (const auto& e : ps) with_spike += e.value("step_us_max", 0.0) == 5000.0;
  EXPECT_EQ(with_spike, 1u);
}

TEST(StepBreakdownReport, SmallJobsKeepEveryStep) {
  const RankBreakdown r = long_rank(12, 0);
  const nlohmann::json ps = StepBreakdownReport::per_step_json(r, 1000);
  ASSERT_EQ(ps.size(), 12u);
  for (std::size_t k = 0; k < ps.size(); ++k) {
    EXPECT_EQ(ps[k]["step"], k + 1);
    EXPECT_EQ(ps[k]["last_step"], k + 1);
    EXPECT_EQ(ps[k]["merged_steps"], 1);
    EXPECT_FALSE(ps[k].contains("step_us_max"));
  }
}

}  // namespace
}  // namespace ncclwatch::analysis

// SimRun-queue wait per step (cpu_wait.h) and the cpu-contention cause it supports: the DDP
// simulator's jobs with scheduling samples added by hand, shaped as the shim writes them (one
// thread per rank, cumulative wait, a sample every 1 ms).
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/analyze.h"
#include "analysis/cpu_wait.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

StepPlan plan_of(std::vector<Interval> steps) {
  StepPlan p;
  p.steps = std::move(steps);
  return p;
}

TEST(CpuWait, WaitIsSpreadOverTheStepsBetweenTwoSamples) {
  model::RankTrace rank;
  // Thread 7: 300 µs of wait between t=0 and t=300, i.e. 1 per ns; thread 9: 50 inside step 1.
  rank.sched = {{0, 7, 0, 1000}, {300, 7, 0, 1300}, {120, 9, 0, 10}, {180, 9, 0, 60}};
  std::sort(rank.sched.begin(), rank.sched.end(), [](const auto& a, const auto& b) {
    return std::pair(a.tid, a.t_ns) < std::pair(b.tid, b.t_ns);
  });
  const auto w = cpu_wait_per_step(rank, plan_of({{0, 100}, {100, 200}, {250, 400}, {500, 600}}));
  ASSERT_EQ(w.size(), 4u);
  EXPECT_DOUBLE_EQ(w[0], 100.0);
  EXPECT_DOUBLE_EQ(w[1], 150.0);
  EXPECT_DOUBLE_EQ(w[2], 50.0);   // only [250, 300) is covered
  EXPECT_TRUE(std::isnan(w[3]));  // no sample covers it
}

// A thread waiting for its peers inside a call (a spin loop queueing for a CPU) is delayed by
// nobody: that wait is left out, the rest spread over the time outside calls.
TEST(CpuWait, WaitInsideCallsIsLeftOut) {
  model::RankTrace rank;
  model::CallEvent call;
  call.enter_ns = 100;
  call.exit_ns = 200;
  rank.calls = {call};
  // [0, 100): 40 of wait; [100, 200) inside the call: 500; [0, 300): 100 more outside.
  rank.sched = {
      {0, 7, 0, 0}, {100, 7, 0, 40}, {200, 7, 0, 540}, {300, 7, 0, 560}, {400, 7, 0, 620}};
  const auto w = cpu_wait_per_step(rank, plan_of({{0, 150}, {150, 400}}));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_DOUBLE_EQ(w[0], 40.0);
  EXPECT_DOUBLE_EQ(w[1], 80.0);
  // One interval half in the call: its wait goes to the half outside.
  rank.sched = {{50, 7, 0, 0}, {150, 7, 0, 30}};
  const auto h = cpu_wait_per_step(rank, plan_of({{0, 100}, {100, 200}}));
  EXPECT_DOUBLE_EQ(h[0], 30.0);
  EXPECT_DOUBLE_EQ(h[1], 0.0);
}

TEST(CpuWait, AWaitThatGoesDownOrNoSamplesGiveNothing) {
  model::RankTrace rank;
  EXPECT_TRUE(cpu_wait_per_step(rank, plan_of({{0, 100}})).empty());
  rank.sched = {{0, 7, 0, 500}, {100, 7, 0, 100}};  // a reused thread id, a damaged file
  const auto w = cpu_wait_per_step(rank, plan_of({{0, 100}}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(std::isnan(w[0]));
}

// Scheduling samples for every rank: a sample every 1 ms over the rank's calls; rank r's
// thread waits `rate[r]` ns per ns (the share of time it was runnable without a CPU).
void add_sched(model::JobTrace& job, const std::vector<double>& rate) {
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    model::RankTrace& rank = job.ranks[r];
    int64_t begin = rank.calls.front().enter_ns, end = begin;
    for (const model::CallEvent& c : rank.calls) end = std::max(end, c.enter_ns);
    for (int64_t t = begin - 1'000'000; t <= end + 2'000'000; t += 1'000'000) {
      const auto wait = static_cast<uint64_t>(rate[r] * static_cast<double>(t - begin + 1'000'000));
      rank.sched.push_back({t, static_cast<uint32_t>(100 + r), 0, wait});
    }
  }
}

struct SimRun {
  model::Report report;
  nlohmann::json stragglers;
  SimRun(testing::SimParams p, const std::vector<double>& rate) {
    testing::SimJob s = testing::simulate(p);
    if (!rate.empty()) add_sched(s.job, rate);
    analyze(s.job, s.match, s.clocks, report);
    stragglers = report.json["stragglers"];
  }
};

// Rank 1 late by 3 ms per step (a stall before each step, 15.5 ms steps) and, by its samples,
// waiting for a CPU 20% of the time (~3.7 ms per step) against 1% for its peers: the wait is
// the cause, host-only or GPU-timed (where the GPU figures alone say host-stall).
TEST(CpuContention, ARankThatWaitedForACpuIsCpuContention) {
  for (bool host_only : {false, true}) {
    auto p = testing::sim_params(4, 2);
    p.jitter_ns = 20'000;
    p.host_only = host_only;
    p.ranks[1].host_stall_ns = 3'000'000;
    const SimRun run(p, {0.01, 0.20, 0.01, 0.01});
    ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
    const auto& s = run.stragglers[0];
    EXPECT_EQ(s["rank"], 1);
    EXPECT_EQ(s["cause"], "cpu-contention") << s.dump(1);
    const double step_us = run.report.json["straggler_analysis"]["step_us"].get<double>();
    EXPECT_NEAR(s["cpu_wait_us_per_step"].get<double>(), 0.20 * step_us, 0.03 * step_us);
    EXPECT_NEAR(s["cpu_wait_baseline_us_per_step"].get<double>(), 0.01 * step_us, 0.01 * step_us);
    EXPECT_NE(s["evidence"].get<std::string>().find("waited for a CPU"), std::string::npos);
    bool said = false;
    for (const auto& f : run.report.findings)
      said = said || f.text.find("waited for a CPU") != std::string::npos;
    EXPECT_TRUE(said) << "no finding says the rank waited for a CPU";
  }
}

// The same stall with a run-queue wait alike on every rank (a busy machine, nobody's fault in
// particular): the cause stays what the GPU figures say, the wait is shown but explains nothing.
TEST(CpuContention, WaitAlikeOnEveryRankIsNoCause) {
  auto p = testing::sim_params(4, 2);
  p.jitter_ns = 20'000;
  p.ranks[1].host_stall_ns = 3'000'000;
  const SimRun run(p, {0.2, 0.2, 0.2, 0.2});
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  EXPECT_EQ(run.stragglers[0]["cause"], "host-stall");
  EXPECT_TRUE(run.stragglers[0]["cpu_wait_us_per_step"].is_number());
  // Without samples (older traces, Kineto) nothing is measured: null.
  const SimRun none(p, {});
  ASSERT_EQ(none.stragglers.size(), 1u);
  EXPECT_EQ(none.stragglers[0]["cause"], "host-stall");
  EXPECT_TRUE(none.stragglers[0]["cpu_wait_us_per_step"].is_null());
}

// A slow GPU whose process also waits a little more for a CPU: the extra compute is larger than
// the extra wait, and waiting for a CPU does not lengthen kernels: gpu-slow.
TEST(CpuContention, ExtraComputeLargerThanTheWaitStaysGpuSlow) {
  auto p = testing::sim_params(4, 2);
  p.jitter_ns = 20'000;
  p.ranks[2].compute_scale = 1.3;
  const SimRun run(p, {0.01, 0.01, 0.05, 0.01});
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  EXPECT_EQ(run.stragglers[0]["cause"], "gpu-slow") << run.stragglers[0].dump(1);
}

// A stall of 3 ms per step (sleep, I/O) on a rank that also waits for a CPU ~1.2 ms more per
// step than its peers (a loaded machine): the wait would pass for a good part of the lateness, but
// the GPU idles 3 ms more per step, more than twice the extra wait: host-stall, not contention.
TEST(CpuContention, ExtraIdleMoreThanTwiceTheWaitStaysHostStall) {
  auto p = testing::sim_params(4, 2);
  p.jitter_ns = 20'000;
  p.ranks[1].host_stall_ns = 3'000'000;
  const SimRun run(p, {0.01, 0.085, 0.01, 0.01});
  ASSERT_EQ(run.stragglers.size(), 1u) << run.stragglers.dump(1);
  const auto& s = run.stragglers[0];
  EXPECT_EQ(s["cause"], "host-stall") << s.dump(1);
  const double extra =
      s["cpu_wait_us_per_step"].get<double>() - s["cpu_wait_baseline_us_per_step"].get<double>();
  EXPECT_GT(extra, 0.3 * 3000) << s.dump(1);  // enough to have been taken for the cause before
}

// Host-only records, a rank late every 4th step by 8 ms and waiting for a CPU a quarter of its
// time at every step, its peers 1 %: its spikes wait hardly more than its other steps, but it
// waits far above its peers in all of them (a rank pinned to a busy core, its lateness bunched by
// the scheduler): cpu-contention, on its peers. The same spikes without the wait: no cause.
TEST(CpuContention, WaitingAtEveryStepExplainsLatenessBunchedIntoSpikes) {
  auto p = testing::sim_params(4, 2);
  p.jitter_ns = 20'000;
  p.host_only = true;
  p.ranks[1].spike_ns = 8'000'000;
  p.ranks[1].spike_every = 4;
  const SimRun waits(p, {0.01, 0.25, 0.01, 0.01});
  ASSERT_EQ(waits.stragglers.size(), 1u) << waits.stragglers.dump(1);
  const auto& s = waits.stragglers[0];
  EXPECT_EQ(s["rank"], 1);
  EXPECT_NE(s["pattern"], "persistent") << s.dump(1);
  EXPECT_EQ(s["cause"], "cpu-contention") << s.dump(1);
  EXPECT_NE(s["evidence"].get<std::string>().find("on its peers"), std::string::npos) << s.dump(1);
  const SimRun alike(p, {0.01, 0.01, 0.01, 0.01});
  ASSERT_EQ(alike.stragglers.size(), 1u) << alike.stragglers.dump(1);
  EXPECT_EQ(alike.stragglers[0]["cause"], "unknown") << alike.stragglers[0].dump(1);
}

}  // namespace
}  // namespace ncclwatch::analysis

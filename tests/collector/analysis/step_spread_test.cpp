// breakdown_analysis.steady: the job's per-step series (step_spread.h), the noise `diff` weighs
// changes against, on the simulator where it follows from the knobs.
#include <gtest/gtest.h>

#include "analysis/analyze.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

nlohmann::json steady_of(const testing::SimParams& p) {
  const auto sim = testing::simulate(p);
  model::Report r;
  analyze(sim.job, sim.match, sim.clocks, r);
  return r.json.at("breakdown_analysis").at("steady");
}

TEST(StepSpread, DeterministicJobHasNoSpread) {
  const auto s = steady_of(testing::sim_params(4, 2));
  EXPECT_EQ(s["basis"], "gpu");
  EXPECT_EQ(s["ranks"], 4);
  EXPECT_EQ(s["steps"], 11);  // 12 steps, the first is warm-up
  // 0.5 memcpy + 5 forward + 4 x 2 backward + 1 exposed transfer + 1 optimizer = 15.5 ms.
  EXPECT_NEAR(s["mean_us"]["step_us"].get<double>(), 15'500, 1);
  EXPECT_NEAR(s["mean_us"]["compute_us"].get<double>(), 14'000, 1);
  EXPECT_NEAR(s["mean_us"]["exposed_transfer_us"].get<double>(), 1'000, 1);
  for (const auto& [key, v] : s["spread_us"].items()) EXPECT_NEAR(v.get<double>(), 0, 1e-6) << key;
  for (const auto& [key, v] : s["sem_us"].items()) EXPECT_NEAR(v.get<double>(), 0, 1e-6) << key;
}

TEST(StepSpread, StallOnSomeStepsShowsInTheStandardErrorNotTheSpread) {
  // A 5 ms stall every 4th step on every rank: most steps are alike (robust spread ~0), the mean
  // carries the stalls (standard error > 0).
  auto p = testing::sim_params(4, 2);
  p.steps = 25;
  for (auto& r : p.ranks) {
    r.spike_ns = 5'000'000;
    r.spike_every = 4;
  }
  const auto s = steady_of(p);
  EXPECT_NEAR(s["spread_us"]["step_us"].get<double>(), 0, 1);
  EXPECT_GT(s["sem_us"]["step_us"].get<double>(), 300);
  EXPECT_GT(s["mean_us"]["idle_step_boundary_us"].get<double>(), 1'000);
}

TEST(StepSpread, JitterSpreadsEveryStep) {
  auto p = testing::sim_params(4, 2);
  p.steps = 30;
  p.noise = testing::Noise::kJitter;
  p.noise_frac = 0.1;  // host starts U(0, 1.55 ms) late per rank and step
  const auto s = steady_of(p);
  const double spread = s["spread_us"]["step_us"].get<double>();
  EXPECT_GT(spread, 50);
  EXPECT_LT(spread, 1'550);
  EXPECT_GT(s["sem_us"]["step_us"].get<double>(), 0);
  EXPECT_LT(s["sem_us"]["step_us"].get<double>(), spread);
}

TEST(StepSpread, HostOnlyRanksGetTheHostSplit) {
  auto p = testing::sim_params(4, 2);
  p.host_only = true;
  const auto s = steady_of(p);
  EXPECT_EQ(s["basis"], "host");
  EXPECT_TRUE(s["mean_us"].contains("host_in_nccl_us"));
  EXPECT_FALSE(s["mean_us"].contains("compute_us"));
}

TEST(BucketSpread, OccurrencesAndSpread) {
  auto p = testing::sim_params(4, 2);
  const auto sim = testing::simulate(p);
  model::Report r;
  analyze(sim.job, sim.match, sim.clocks, r);
  const auto& b = r.json.at("buckets");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0]["occurrences"], 4 * 11);
  EXPECT_NEAR(b[0]["overlap_pct_sd"].get<double>(), 0, 1e-9);  // every step alike
  EXPECT_NEAR(b[3]["exposed_us_sd"].get<double>(), 0, 1e-6);
}

}  // namespace
}  // namespace ncclwatch::analysis

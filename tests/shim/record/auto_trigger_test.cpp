// Capture by itself (record/auto_trigger.h): a regression is seen, noise and steady state are
// not, the late rank asks at once and a waiting one defers, the cool-down and the daily budget
// hold, and steps in full detail count for nothing.
#include "record/auto_trigger.h"

#include <gtest/gtest.h>

#include <random>

#include "record_builder.h"

namespace ncclwatch::shim {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kMin = 60'000 * kMs;
constexpr int64_t kRealtimeOffset = 1'700'000'000LL * 1'000'000'000;  // 2023-11-14 22:13:20 UTC

AutoCapture config(uint64_t steps = 20, int64_t cooldown = 30 * kMin, uint32_t per_day = 10) {
  AutoCapture c;
  c.steps = steps;
  c.cooldown_ns = cooldown;
  c.per_day = per_day;
  return c;
}

// Feeds steps of one rank, one after the other in host time.
struct Rank {
  AutoTrigger trigger;
  int32_t rank;
  uint64_t step = 0;
  int64_t now = 1000 * kMs;
  Rank(const AutoCapture& c, int32_t r) : trigger(c, "job7", kRealtimeOffset), rank(r) {}

  // `n` steps of `step_ms`, of which `compute_ms` compute and `wait_ms` exposed communication
  // (the rest idle); flags for kStepDetail.
  void steps(int n, double step_ms, double compute_ms, double wait_ms, uint8_t flags = 0) {
    for (int i = 0; i < n; ++i) {
      const auto duration_us = static_cast<uint32_t>(step_ms * 1000);
      const auto compute_us = static_cast<uint32_t>(compute_ms * 1000);
      const auto exposed_us = static_cast<uint32_t>(wait_ms * 1000);
      const format::Record s =
          test_support::step_record({.flags = flags,
                                     .step = static_cast<uint32_t>(step++),
                                     .start_ns = now,
                                     .duration_us = duration_us,
                                     .compute_us = compute_us,
                                     .exposed_us = exposed_us,
                                     .idle_us = duration_us - compute_us - exposed_us});
      now += static_cast<int64_t>(step_ms * kMs);
      trigger.observe(s.step, rank, now);
    }
  }
  std::optional<format::CaptureAsk> take() { return trigger.take(now, step - 1, 10 * kMs); }
};

TEST(AutoTrigger, SteadyStateAndNoiseNeverTrigger) {
  Rank r(config(), 0);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(-0.1, 0.1);  // +-10 % per step
  for (int i = 0; i < 5000; ++i) {
    const double f = 1.0 + noise(rng);
    r.steps(1, 10.0 * f, 8.0 * f, 1.0);
    ASSERT_FALSE(r.trigger.pending()) << "step " << i;
  }
  // Every 7th step twice as long (a periodic checkpoint, a data-loader hiccup): the median holds.
  for (int i = 0; i < 1000; ++i) r.steps(1, i % 7 == 6 ? 20.0 : 10.0, 8.0, 1.0);
  EXPECT_FALSE(r.trigger.pending());
  EXPECT_FALSE(r.take());
}

// A noisy baseline (a busy host: steps of 10 ms +-3 ms) raises the bar to its own spread: +2 ms
// is noise there, +8 ms is not.
TEST(AutoTrigger, TheBarRisesWithTheBaselinesNoise) {
  const auto run = [](double slow_ms) {
    Rank r(config(), 0);
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> noise(-3.0, 3.0);
    for (int i = 0; i < 200; ++i) r.steps(1, 10.0 + noise(rng), 8.0, 1.0);
    for (int i = 0; i < 10; ++i) r.steps(1, slow_ms + noise(rng), 8.0, 1.0);
    return r.trigger.pending();
  };
  EXPECT_FALSE(run(12.0));
  EXPECT_TRUE(run(20.0));
}

TEST(AutoTrigger, SmallRegressionsAreNoTrigger) {
  Rank a(config(), 0);  // +12.5 %, 0.25 ms
  a.steps(200, 2.0, 1.5, 0.2);
  a.steps(50, 2.25, 1.75, 0.2);
  EXPECT_FALSE(a.trigger.pending());
  Rank b(config(), 0);  // +30 % but 0.6 ms: below the 1 ms floor
  b.steps(200, 2.0, 1.5, 0.2);
  b.steps(50, 2.6, 2.1, 0.2);
  EXPECT_FALSE(b.trigger.pending());
  Rank c(config(), 0);  // +14 % of 10 ms
  c.steps(200, 10.0, 8.0, 1.0);
  c.steps(50, 11.4, 9.4, 1.0);
  EXPECT_FALSE(c.trigger.pending());
}

// The late rank (its compute grew, its wait did not) asks at once, in words that name it; a rank
// that waits for it asks with the same id in the same cool-down period.
TEST(AutoTrigger, TheLateRankAsksAtOnceWithItsWords) {
  Rank late(config(), 17);
  late.steps(100, 10.0, 8.0, 1.0);
  late.steps(7, 13.0, 11.0, 1.0);
  EXPECT_FALSE(late.trigger.pending()) << "seven slow steps are not yet 8 of the last 10";
  late.steps(1, 13.0, 11.0, 1.0);
  ASSERT_TRUE(late.trigger.pending());
  const auto ask = late.take();
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->trigger, format::WindowTrigger::kStepTime);
  EXPECT_EQ(ask->unit, format::kCaptureSteps);
  EXPECT_EQ(ask->count, 20u);
  // 3 s of the regressed 13 ms steps ahead of the newest step.
  EXPECT_EQ(ask->first, late.step - 1 + 231);
  EXPECT_EQ(ask->requested_realtime_ns, late.now + kRealtimeOffset);
  EXPECT_NE(ask->text.find("step time +30% since 22:13:2"), std::string::npos) << ask->text;
  EXPECT_NE(ask->text.find("(10.0 ms -> 13.0 ms; rank 17: compute +3.0 ms, own wait 1.0 ms: the "
                           "others wait for it)"),
            std::string::npos)
      << ask->text;
  EXPECT_FALSE(late.trigger.pending());

  Rank waiting(config(), 3);
  waiting.steps(100, 10.0, 8.0, 1.0);
  waiting.steps(10, 13.0, 8.0, 4.0);
  ASSERT_TRUE(waiting.trigger.pending());
  EXPECT_FALSE(waiting.take()) << "a waiting rank lets the late one ask first";
  waiting.now += AutoTrigger::kDeferNs;
  const auto own = waiting.take();
  ASSERT_TRUE(own) << "nobody asked meanwhile: it asks itself";
  EXPECT_EQ(own->id, ask->id);
  EXPECT_NE(own->text.find("rank 3: own wait +3.0 ms: it waits for a peer"), std::string::npos)
      << own->text;
}

// A rank that waits for a peer whose compute quadrupled (tiers_test beside four busy loops): its
// steps go from 30 to 120 ms, 90 of them waiting. The verdict comes when 8 of the last 10 steps
// are slow, two of them from before the change -- one a noisy 35.6 ms step with 1 ms of wait.
// Judged on those, it was "+18%, 30.2 ms -> 35.6 ms, own step +5.4 ms: the others wait for it",
// and it asked before the late rank. Its figures come from the slow steps: it defers.
TEST(AutoTrigger, ARankWaitingForALatePeerSaysSoAtTheEdgeOfTheChange) {
  Rank waiting(config(), 2);
  waiting.steps(100, 30.2, 20.0, 0.1);
  waiting.steps(1, 35.6, 20.0, 1.0);
  waiting.steps(1, 30.2, 20.0, 0.1);
  while (!waiting.trigger.pending() && waiting.step < 130) waiting.steps(1, 120.0, 20.0, 90.0);
  ASSERT_TRUE(waiting.trigger.pending());
  EXPECT_FALSE(waiting.take()) << "a waiting rank lets the late one ask first";
  waiting.now += AutoTrigger::kDeferNs;
  const auto own = waiting.take();
  ASSERT_TRUE(own);
  EXPECT_NE(own->text.find("(30.2 ms -> 120.0 ms; rank 2: own wait +89.9 ms: it waits for a peer)"),
            std::string::npos)
      << own->text;
  EXPECT_NE(own->text.find("step time +297% since"), std::string::npos) << own->text;
}

TEST(AutoTrigger, AWindowAppliedMeanwhileCancelsADeferredAsk) {
  Rank waiting(config(), 3);
  waiting.steps(100, 10.0, 8.0, 1.0);
  waiting.steps(10, 13.0, 8.0, 4.0);
  ASSERT_TRUE(waiting.trigger.pending());
  waiting.trigger.applied(waiting.now + 500 * kMs);  // the late rank's window came
  waiting.now += AutoTrigger::kDeferNs;
  EXPECT_FALSE(waiting.trigger.pending());
  EXPECT_FALSE(waiting.take());
  // The slow level is the new baseline: no second verdict for the same change.
  waiting.steps(300, 13.0, 8.0, 4.0);
  EXPECT_FALSE(waiting.trigger.pending());
}

// The wait at the collectives jumped without the step time following (own compute shrank).
TEST(AutoTrigger, AWaitJumpAlone) {
  Rank r(config(), 2);
  r.steps(100, 10.0, 8.0, 1.0);
  r.steps(10, 10.0, 6.0, 3.5);
  ASSERT_TRUE(r.trigger.pending());
  r.now += AutoTrigger::kDeferNs;
  const auto ask = r.take();
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->trigger, format::WindowTrigger::kWait);
  EXPECT_NE(ask->text.find("wait in the collectives +2.5 ms since"), std::string::npos)
      << ask->text;
}

TEST(AutoTrigger, StepsInFullDetailAreNeitherBaselineNorRegression) {
  Rank r(config(), 0);
  r.steps(50, 13.0, 11.0, 1.0, format::kStepDetail);  // the first:50 window, slowed by CUPTI
  r.steps(100, 10.0, 8.0, 1.0);
  r.steps(20, 20.0, 18.0, 1.0, format::kStepDetail);  // an on-demand window
  r.steps(100, 10.0, 8.0, 1.0);
  EXPECT_FALSE(r.trigger.pending());
  // Too few steps outside windows for a baseline.
  Rank fresh(config(), 0);
  fresh.steps(200, 10.0, 8.0, 1.0, format::kStepDetail);
  fresh.steps(49, 10.0, 8.0, 1.0);
  fresh.steps(10, 20.0, 18.0, 1.0);
  EXPECT_FALSE(fresh.trigger.pending());
}

// 20:10m:3: at most one window per 10 minutes, three a day.
TEST(AutoTrigger, CoolDownAndDailyBudget) {
  Rank r(config(20, 10 * kMin, 3), 1);
  int asked = 0;
  const auto regress = [&](int64_t at) {
    r.now = std::max(r.now, at);
    r.steps(100, 10.0, 8.0, 1.0);
    r.steps(10, 20.0, 18.0, 1.0);
    EXPECT_TRUE(r.trigger.pending());
    const auto ask = r.take();
    if (ask) {
      ++asked;
      r.trigger.applied(r.now);
      r.steps(200, 10.0, 8.0, 1.0);  // back to normal, a new baseline
    }
    return ask.has_value();
  };
  const int64_t t0 = 1000 * kMs;
  EXPECT_TRUE(regress(t0));
  EXPECT_FALSE(regress(t0 + 5 * kMin)) << "within the cool-down";
  EXPECT_TRUE(regress(t0 + 20 * kMin));
  EXPECT_TRUE(regress(t0 + 40 * kMin));
  EXPECT_FALSE(regress(t0 + 60 * kMin)) << "three a day";
  EXPECT_FALSE(regress(t0 + 23 * 60 * kMin));
  EXPECT_TRUE(regress(t0 + 24 * 60 * kMin + kMin)) << "the first one is a day old";
  EXPECT_EQ(asked, 4);
}

TEST(AutoTrigger, HangWindowsShareTheBudget) {
  Rank r(config(20, 10 * kMin, 10), 1);
  const auto ask = r.trigger.hang("rank 1 waiting 30 s in ncclAllReduce #812", r.now);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->unit, format::kCaptureRecent);
  EXPECT_EQ(ask->trigger, format::WindowTrigger::kHang);
  EXPECT_EQ(ask->count, static_cast<uint64_t>(AutoTrigger::kHangWindowNs));
  EXPECT_EQ(ask->text, "rank 1 waiting 30 s in ncclAllReduce #812");
  r.trigger.applied(r.now);
  EXPECT_FALSE(r.trigger.hang("again", r.now + kMin));
  r.steps(100, 10.0, 8.0, 1.0);
  r.steps(10, 20.0, 18.0, 1.0);
  EXPECT_FALSE(r.take()) << "within the hang window's cool-down";
}

TEST(AutoTrigger, OffDoesNothing) {
  AutoCapture off;
  off.on = false;
  Rank r(off, 0);
  r.steps(100, 10.0, 8.0, 1.0);
  r.steps(10, 20.0, 18.0, 1.0);
  EXPECT_FALSE(r.trigger.pending());
  EXPECT_FALSE(r.trigger.hang("x", r.now));
}

}  // namespace
}  // namespace ncclwatch::shim

// The drain thread's step learner (record/step_learner.h) on synthetic collective sequences with
// known steps: distinct collectives (the tokens say the step), equal buckets (the gaps say it),
// one collective per step, and equal buckets on a busy machine: random extra gaps of 0.1-20 ms
// on a sizeable fraction of the calls and occasional long stalls, seeded so that every run sees
// the same calls. Ranks of one job see the same collectives with different noise; each must
// learn the true step with the same phase, or not learn yet -- never a step of its own.
#include "record/step_learner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ncclwatch::shim {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kUs = 1'000;
constexpr uint64_t kBucket = 42;
constexpr uint64_t kBroadcast = 7;

// splitmix64: the same numbers on every platform (the standard distributions are not).
class Random {
 public:
  explicit Random(uint64_t seed) : x_(seed) {}
  uint64_t next() {
    uint64_t z = (x_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t x_;
};

// What a busy machine adds to the gap before a call: on `fraction` of the calls an extra gap of
// 0.1-20 ms (the rank's thread preempted), on `stalls` of them 100-500 ms.
struct Noise {
  double fraction = 0;
  double stalls = 0;
  double jitter = 0;  // every gap off by up to this fraction either way
};

// The rank's collectives on its reference comm: one broadcast (seq 0), then `per_step` equal
// buckets per step (seq 1 + per_step x s + b), the first after a gap of `wide`, the others
// `narrow` apart, but the third `third` after the second when that is set. `absolute`: the rank
// runs on a schedule (the GPU paces it), so a late call makes the next gap shorter by as much;
// `absorbed`: only the wide gap (a wait for the GPU) absorbs the lateness of the call before it,
// down to `narrow`; else every later call is late as well.
struct Job {
  uint32_t per_step = 4;
  int64_t narrow = 1 * kMs;
  int64_t wide = 2500 * kUs;
  int64_t third = 0;
  Noise noise;
  bool absolute = false;
  bool absorbed = false;
  // From this call on, `later` instead of `noise` (0: never).
  std::size_t later_from = 0;
  Noise later;
};

struct Outcome {
  StepLearner::State state;
  StepPattern pattern;
  std::size_t calls;  // calls added until the learner decided (or all of them)
};

Outcome learn(const Job& job, uint64_t seed, std::size_t max_calls) {
  Random random(seed);
  StepLearner l;
  int64_t planned = 0, late = 0, last_extra = 0;
  std::size_t added = 1;
  l.add({0, planned, kBroadcast});
  for (uint32_t seq = 1; added < max_calls && l.state() == StepLearner::State::kLearning;
       ++seq, ++added) {
    const uint32_t bucket = (seq - 1) % job.per_step;
    const int64_t gap = bucket == 0                    ? job.wide
                        : bucket == 2 && job.third > 0 ? job.third
                                                       : job.narrow;
    const auto spread = static_cast<int64_t>(job.noise.jitter * static_cast<double>(gap));
    planned += spread > 0 ? random.between(gap - spread, gap + spread) : gap;
    int64_t extra = 0;
    const Noise& noise = job.later_from != 0 && added >= job.later_from ? job.later : job.noise;
    if (random.chance(noise.fraction)) extra += random.between(100 * kUs, 20 * kMs);
    if (random.chance(noise.stalls)) extra += random.between(100 * kMs, 500 * kMs);
    if (job.absolute) {
      l.add({seq, planned + extra, kBucket});
      continue;
    }
    if (job.absorbed && bucket == 0) late -= std::min(last_extra, job.wide - job.narrow);
    late += extra;
    last_extra = extra;
    l.add({seq, planned + late, kBucket});
  }
  return {l.state(), l.pattern(), added};
}

// Eight ranks of one job: whoever learns has the true step and the same phase; at least
// `min_learned` of them within kMaxCalls calls.
void expect_true_step_or_none(const Job& job, std::size_t min_learned) {
  std::size_t learned = 0;
  for (uint64_t rank = 0; rank < 8; ++rank) {
    const Outcome o = learn(job, 1000 + rank, StepLearner::kMaxUnclearCalls + 1);
    if (o.state != StepLearner::State::kLearned) continue;
    learned += o.calls <= StepLearner::kMaxCalls;
    EXPECT_EQ(o.pattern.period, job.per_step) << "rank " << rank << " after " << o.calls;
    EXPECT_EQ(o.pattern.phase, 1 % job.per_step) << "rank " << rank << " after " << o.calls;
    EXPECT_EQ(o.pattern.start_token, kBucket);
  }
  EXPECT_GE(learned, min_learned);
}

TEST(StepLearner, DistinctOpsGiveTheirPeriod) {
  StepLearner l;
  // A step of 3 collectives: two all-gathers of one size, a reduce-scatter of another.
  uint64_t tokens[] = {1, 1, 2};
  for (uint32_t i = 0; i < 60 && l.state() == StepLearner::State::kLearning; ++i)
    l.add({i, static_cast<int64_t>(i) * 1000, tokens[i % 3]});
  ASSERT_EQ(l.state(), StepLearner::State::kLearned);
  EXPECT_EQ(l.pattern().period, 3u);
}

TEST(StepLearner, EqualBucketsAreCutAtTheWideGap) {
  StepLearner l;
  for (uint32_t i = 0; i < 400 && l.state() == StepLearner::State::kLearning; ++i) {
    const int64_t step = i / 5, in_step = i % 5;
    // Seq 0 and 1 are warm-up broadcasts; from seq 2 on, five buckets per step, the first after
    // the forward pass.
    l.add({i + 2, step * 20 * kMs + in_step * 100'000, kBucket});
  }
  ASSERT_EQ(l.state(), StepLearner::State::kLearned);
  EXPECT_EQ(l.pattern().period, 5u);
  EXPECT_EQ(l.pattern().phase, 2u);  // seq 2, 7, 12, ... start steps
}

// A quiet machine: the gaps split cleanly (every wide gap 2x every narrow one), and a short job
// (the scenario tests' 16 steps of 4 buckets) has its steps at 24 calls, while it runs -- not at
// its end, when its schedule windows (steps 3-5) are long past.
TEST(StepLearner, CleanGapsAreLearnedInTheFirstSteps) {
  Job job;
  const Outcome o = learn(job, 1, 65);
  ASSERT_EQ(o.state, StepLearner::State::kLearned);
  EXPECT_LE(o.calls, 24u);
  EXPECT_EQ(o.pattern.period, 4u);
  EXPECT_EQ(o.pattern.phase, 1u);
}

// A busy machine: in the first steps a few gaps inside a step are as wide as the gap between
// steps (the rank was preempted). The learner waits for more steps rather than taking every
// bucket for a step (which it did at 24 calls: period 1).
TEST(StepLearner, PreemptedGapsInTheFirstStepsDoNotMakeEveryBucketAStep) {
  StepLearner l;
  int64_t t = 0;
  for (uint32_t i = 0; i < 200 && l.state() == StepLearner::State::kLearning; ++i) {
    const bool preempted = i == 13 || i == 14 || i == 15 || i == 18 || i == 19 || i == 22;
    t += i % 4 == 0 ? 10 * kMs : preempted ? 30 * kMs : 100'000;
    l.add({i, t, kBucket});
  }
  ASSERT_EQ(l.state(), StepLearner::State::kLearned);
  EXPECT_EQ(l.pattern().period, 4u);
  EXPECT_EQ(l.pattern().phase, 0u);
}

// 4 equal buckets per step, the wide gap 2.5x the narrow ones, extra gaps on 30 % of the calls
// and a long stall on 1 %: the learner with counted threshold crossings took period 1 (every
// bucket a step) after 96 calls, or another period on another rank.
TEST(StepLearner, EqualBucketsOnABusyMachineGiveTheTrueStepOnEveryRank) {
  Job job;
  job.noise = {0.3, 0.01};
  expect_true_step_or_none(job, 6);
}

// fake_train's shape: the buckets of a step back to back (tens of us apart), the step's first
// after the forward pass and the optimizer (10 ms); the extra gaps are as long as the step.
TEST(StepLearner, BackToBackBucketsOnABusyMachineGiveTheTrueStep) {
  Job job;
  job.narrow = 20 * kUs;
  job.wide = 8 * kMs;
  job.noise = {0.3, 0.01};
  expect_true_step_or_none(job, 8);
}

// What fake_train's ranks showed beside two CPU hogs (capture_latency_bench): in each step the
// gap before the third bucket is often 0.6-2 ms while the others are tens of us, and more so in
// the first steps. The gaps then repeat every 2 calls as well as every 4: a rank whose delay
// before the third bucket was steady took 2 (at 96 calls), its peer 4.
TEST(StepLearner, ADelayInTheMiddleOfTheStepDoesNotHalveIt) {
  Job job;
  job.narrow = 20 * kUs;
  job.wide = 8 * kMs;
  job.third = 1500 * kUs;
  expect_true_step_or_none(job, 8);
  job.noise = {0.3, 0.01};
  expect_true_step_or_none(job, 6);
}

// A launch-bound step: the host launches kernels between its buckets (1.7 ms), and the step's
// first bucket comes right after the previous step's last (116 us): one narrow gap per step of 4.
// Every other gap is wide, so at half the step one phase is wide throughout and the other
// alternates wide and narrow (its lower median narrow): taken for a step of 2 on a quiet
// machine. Nobody learns 2 (the step of 4 has no wide phase to find: no step, or the step).
TEST(StepLearner, OneNarrowGapPerStepIsNotHalvedIntoSteps) {
  Job job;
  job.wide = 116 * kUs;
  job.narrow = 1700 * kUs;
  job.noise = {0, 0, 0.3};
  expect_true_step_or_none(job, 0);
  job.noise = {0.1, 0.01, 0.3};
  expect_true_step_or_none(job, 0);
}

// More buckets, a narrower jump (2x), and the calls on a schedule (a late call shortens the gap
// after it, the wide one too): whoever learns has the true step.
TEST(StepLearner, ScheduledBucketsOnABusyMachineNeverGiveAnotherStep) {
  Job job;
  job.per_step = 8;
  job.wide = 2 * kMs;
  job.noise = {0.3, 0.01};
  job.absolute = true;
  expect_true_step_or_none(job, 0);
  job.per_step = 6;
  job.wide = 3 * kMs;
  expect_true_step_or_none(job, 0);
}

// 60 % of the calls with an extra gap: the narrow phases are more often wide than not. No step
// can be told from the gaps; the learner looks again at the newest calls for a while, then gives
// up (steps then come from the clock) rather than guess.
TEST(StepLearner, GapsHiddenByNoiseGiveNoStep) {
  Job job;
  job.noise = {0.6, 0.01};
  for (uint64_t rank = 0; rank < 8; ++rank) {
    const Outcome o = learn(job, 2000 + rank, StepLearner::kMaxUnclearCalls + 1);
    EXPECT_TRUE(o.state == StepLearner::State::kFailed ||
                (o.pattern.period == 4 && o.pattern.phase == 1))
        << "rank " << rank << ": period " << o.pattern.period << " phase " << o.pattern.phase;
  }
}

// fake_train's launch-bound job beside four busy loops on 2 cores (tiers_test): back-to-back
// buckets (20 us), the step's first after 1.5 ms, and three calls in four entered late by 0.1-20
// ms, each delay making every later call late too. The medians of every phase are the delays';
// the gaps no delay hit keep the step (step_gaps::floor_gap_period): every rank learns the true
// step (before this rule none did within 4,800 calls).
TEST(StepLearner, TheGapsNoDelayHitTellTheStepOnAMachineBusyAtEveryCall) {
  Job job;
  job.narrow = 20 * kUs;
  job.wide = 1500 * kUs;
  job.noise = {0.75, 0.01};
  for (uint64_t rank = 0; rank < 8; ++rank) {
    const Outcome o = learn(job, 7000 + rank, StepLearner::kMaxCalls);
    ASSERT_EQ(o.state, StepLearner::State::kLearned) << "rank " << rank;
    EXPECT_EQ(o.pattern.period, 4u) << "rank " << rank << " after " << o.calls;
    EXPECT_EQ(o.pattern.phase, 1u) << "rank " << rank << " after " << o.calls;
  }
  // Where the GPU paces the rank (a late call shortens the gap after it), nobody learns another
  // step from the low ends.
  job.absolute = true;
  expect_true_step_or_none(job, 0);
  job.per_step = 8;
  expect_true_step_or_none(job, 0);
}

// Contention that comes and goes (fake_train's 1 ms steps, 4 ranks beside two CPU hogs: the step
// hidden in the gaps of the first 3,000 calls, plain in the next 4,500): the learner looks again
// at the newest calls and learns the step once they show it.
TEST(StepLearner, AStepHiddenByContentionIsLearnedWhenItPasses) {
  Job job;
  job.narrow = 40 * kUs;
  job.wide = 1200 * kUs;
  job.absorbed = true;
  job.noise = {0.6, 0.01};
  job.later_from = 4000;
  job.later = {0.25, 0.01};
  for (uint64_t rank = 0; rank < 8; ++rank) {
    const Outcome o = learn(job, 5000 + rank, StepLearner::kMaxUnclearCalls + 1);
    ASSERT_EQ(o.state, StepLearner::State::kLearned) << "rank " << rank;
    EXPECT_EQ(o.pattern.period, 4u) << "rank " << rank << " after " << o.calls;
    EXPECT_EQ(o.pattern.phase, 1u) << "rank " << rank << " after " << o.calls;
    EXPECT_GT(o.calls, StepLearner::kMaxCalls) << "rank " << rank;
  }
}

// One collective per step: no gap can confirm it; it is taken once the gaps are flat at every
// candidate step up to kMaxMultiple calls (768 calls), or at the end of a short run.
TEST(StepLearner, OneCollectivePerStepIsTakenWhenTheGapsAreFlat) {
  StepLearner l;
  for (uint32_t i = 0; i < 767; ++i) l.add({i, static_cast<int64_t>(i) * 10 * kMs, kBucket});
  EXPECT_EQ(l.state(), StepLearner::State::kLearning);
  l.add({767, 7670 * kMs, kBucket});
  ASSERT_EQ(l.state(), StepLearner::State::kLearned);
  EXPECT_EQ(l.pattern().period, 1u);
  EXPECT_EQ(l.calls(), 0u);
  StepLearner short_run;
  for (uint32_t i = 0; i < 30; ++i) short_run.add({i, static_cast<int64_t>(i) * 10 * kMs, 42});
  EXPECT_EQ(short_run.state(), StepLearner::State::kLearning);
  EXPECT_EQ(short_run.conclude(), StepLearner::State::kLearned);
  EXPECT_EQ(short_run.pattern().period, 1u);
}

TEST(StepLearner, OneCollectivePerStepOnABusyMachineIsTaken) {
  Job job;
  job.per_step = 1;
  job.wide = 10 * kMs;
  job.noise = {0.3, 0.01};
  for (uint64_t rank = 0; rank < 8; ++rank) {
    const Outcome o = learn(job, 3000 + rank, StepLearner::kMaxCalls + 1);
    ASSERT_EQ(o.state, StepLearner::State::kLearned) << "rank " << rank;
    EXPECT_EQ(o.pattern.period, 1u);
    EXPECT_LE(o.calls, 1536u) << "rank " << rank;
  }
}

// A short run of equal buckets ends while learning: the end decides with fewer gaps, never as
// one bucket per step.
TEST(StepLearner, ConcludeTakesNoStepTheGapsContradict) {
  Job job;
  job.noise = {0.3, 0.01};
  for (uint64_t rank = 0; rank < 8; ++rank) {
    Random random(4000 + rank);
    StepLearner l;
    int64_t t = 0;
    for (uint32_t seq = 1; seq <= 150; ++seq) {
      t += (seq - 1) % 4 == 0 ? job.wide : job.narrow;
      if (random.chance(job.noise.fraction)) t += random.between(100 * kUs, 20 * kMs);
      l.add({seq, t, kBucket});
    }
    ASSERT_EQ(l.state(), StepLearner::State::kLearning);
    if (l.conclude() == StepLearner::State::kLearned) {
      EXPECT_EQ(l.pattern().period, 4u) << "rank " << rank;
      EXPECT_EQ(l.pattern().phase, 1u) << "rank " << rank;
    }
  }
}

TEST(StepLearner, NoRepetitionGivesUp) {
  StepLearner l;
  uint64_t x = 88172645463325252ULL;
  for (uint32_t i = 0; i < StepLearner::kMaxCalls + 10; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    l.add({i, static_cast<int64_t>(i) * 1000, x});
  }
  EXPECT_EQ(l.state(), StepLearner::State::kFailed);
}

// Another rank's pattern of the comm (ncclwatch/job_steps.h) is taken while learning and after
// giving up, unless this rank's own calls at its phase are other collectives.
TEST(StepLearner, AdoptsAPatternItsCallsDoNotContradict) {
  StepLearner learning;
  for (uint32_t i = 0; i < 20; ++i) learning.add({i, static_cast<int64_t>(i) * kMs, kBucket});
  ASSERT_EQ(learning.state(), StepLearner::State::kLearning);
  EXPECT_FALSE(learning.adopt({4, 4, kBucket}));     // phase not below period
  EXPECT_FALSE(learning.adopt({4, 1, kBroadcast}));  // its step starts are buckets
  EXPECT_EQ(learning.state(), StepLearner::State::kLearning);
  EXPECT_TRUE(learning.adopt({4, 1, kBucket}));
  EXPECT_EQ(learning.state(), StepLearner::State::kLearned);
  EXPECT_TRUE(learning.adopted());
  EXPECT_EQ(learning.pattern().period, 4u);
  EXPECT_FALSE(learning.adopt({2, 1, kBucket}));  // learned: kept
  learning.reset();
  EXPECT_FALSE(learning.adopted());

  StepLearner failed;
  uint64_t x = 88172645463325252ULL;
  for (uint32_t i = 0; i < StepLearner::kMaxCalls + 10; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    failed.add({i, static_cast<int64_t>(i) * 1000, x});
  }
  ASSERT_EQ(failed.state(), StepLearner::State::kFailed);
  EXPECT_TRUE(failed.adopt({3, 0, 99}));  // nothing held to contradict it
  EXPECT_EQ(failed.state(), StepLearner::State::kLearned);
}

// A rank that learned alone has not adopted.
TEST(StepLearner, LearnedAloneIsNotAdopted) {
  StepLearner l;
  for (uint32_t i = 0; i < 48; ++i)
    l.add({i, static_cast<int64_t>(i) * kMs, i % 3 == 0 ? kBroadcast : kBucket});
  ASSERT_EQ(l.state(), StepLearner::State::kLearned);
  EXPECT_FALSE(l.adopted());
}

}  // namespace
}  // namespace ncclwatch::shim

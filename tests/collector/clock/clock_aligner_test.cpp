#include "clock/clock_aligner.h"

#include <random>

#include <gtest/gtest.h>

#include "match/matcher.h"
#include "synthetic_job.h"

namespace ncclwatch::clock {
namespace {

using testing::JobBuilder;
constexpr uint64_t kComm = 0x1234;
const std::vector<int> kAll = {0, 1, 2, 3};

// Tolerance the tests hold the estimate to: the synthetic exits carry up to 20 us of jitter.
constexpr int64_t kToleranceNs = 10'000;

TEST(ClockAligner, OneHostNeedsNothing) {
  JobBuilder b(4, 1);
  b.comm(kComm, kAll);
  b.all_reduces(kComm, kAll, 0, 20, 0, 100'000);
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  ASSERT_EQ(c.hosts.size(), 1u);
  EXPECT_EQ(c.hosts[0].method, "reference");
  EXPECT_EQ(c.rank_offset_ns, (std::vector<int64_t>(4, 0)));
}

TEST(ClockAligner, RecoversAnInjectedOffsetFromHostExits) {
  JobBuilder b(4, 2);  // ranks 0,2 on node0; 1,3 on node1
  b.comm(kComm, kAll);
  b.all_reduces(kComm, kAll, 0, 200, 0, 1'000'000);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> jitter(0, 20'000);
  for (auto& r : b.job.ranks) {
    for (auto& call : r.calls) call.exit_ns += jitter(rng);
  }
  // A few instances where node1's exit is late by milliseconds (a descheduled thread).
  for (int i = 0; i < 10; ++i) b.job.ranks[1].calls[i * 7].exit_ns += 5'000'000;
  for (int i = 0; i < 10; ++i) b.job.ranks[3].calls[i * 7].exit_ns += 5'000'000;
  const int64_t skew = 3'456'789;  // node1's clock runs ahead; NTP did not see it
  b.shift_clock(1, skew);
  b.shift_clock(3, skew);
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  ASSERT_EQ(c.hosts.size(), 2u);
  EXPECT_EQ(c.hosts[1].host, "node1");
  EXPECT_EQ(c.hosts[1].method, "host-exit");
  EXPECT_NEAR(c.hosts[1].offset_ns, -skew, kToleranceNs);
  EXPECT_GE(c.hosts[1].samples, 180u);
  EXPECT_LT(c.hosts[1].residual_ns, 20'000);
  EXPECT_EQ(c.rank_offset_ns[1], c.rank_offset_ns[3]);
  EXPECT_EQ(c.rank_offset_ns[0], 0);
}

TEST(ClockAligner, PrefersGpuKernelEnds) {
  JobBuilder b(2, 2);
  b.comm(kComm, {0, 1});
  b.all_reduces(kComm, {0, 1}, 0, 50, 0, 1'000'000);
  for (auto& r : b.job.ranks) {
    for (auto& call : r.calls) {
      call.gpu_start_ns = call.enter_ns + 100'000;
      call.gpu_end_ns = call.enter_ns - 1000 * r.info.rank + 400'000;  // simultaneous ends
      call.exit_ns = call.enter_ns + 10;  // async launch: host exits say nothing
    }
  }
  b.shift_clock(1, -777'000);
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  EXPECT_EQ(c.hosts[1].method, "gpu-kernel-end");
  EXPECT_NEAR(c.hosts[1].offset_ns, 777'000, 10);
}

TEST(ClockAligner, WallClockBaseWithoutSupportIsKept) {
  JobBuilder b(2, 2);
  b.comm(kComm, {0, 1});
  b.all_reduces(kComm, {0, 1}, 0, 2, 0, 1'000'000);  // 2 samples: below the minimum
  b.job.ranks[1].info.wall_offset_ns += 123'000;     // node1's monotonic clock started later
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  EXPECT_EQ(c.hosts[1].method, "wall-clock (no support)");
  EXPECT_EQ(c.hosts[1].samples, 0u);
  EXPECT_EQ(c.hosts[1].offset_ns, 123'000);
}

// Timestamps near INT64_MAX (a damaged trace the reader's checks did not see, or a hostile one):
// every sum and difference saturates instead of overflowing (UBSan in the sanitizer build), and
// the offsets stay within int64 with the right sign.
TEST(ClockAligner, TimestampsNearTheInt64LimitSaturate) {
  JobBuilder b(2, 2);
  b.comm(kComm, {0, 1});
  b.all_reduces(kComm, {0, 1}, 0, 50, 0, 1'000'000);
  for (auto& call : b.job.ranks[1].calls) {
    call.enter_ns = INT64_MAX - 10;
    call.exit_ns = INT64_MAX - 5;
  }
  b.job.ranks[0].info.wall_offset_ns = INT64_MIN + 7;
  b.job.ranks[1].info.wall_offset_ns = INT64_MAX - 7;
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  ASSERT_EQ(c.hosts.size(), 2u);
  EXPECT_EQ(c.rank_offset_ns[0], 0);
  EXPECT_LE(c.rank_offset_ns[1], INT64_MAX);
  EXPECT_GE(c.residual_ns, 0);
}

TEST(ClockAligner, NoAnchorsAndNoSupportMeansNoShift) {
  JobBuilder b(2, 2);
  for (auto& r : b.job.ranks) r.info.wall_offset_ns = 0;
  b.shift_clock(1, 999);
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  EXPECT_EQ(c.hosts[1].method, "none (no support)");
  EXPECT_EQ(c.rank_offset_ns[1], 0);
}

TEST(ClockAligner, ChainsThroughHostsWithoutACommonComm) {
  // node0-node1 share comm A, node1-node2 share comm B: node2 is placed through node1.
  JobBuilder b(3, 3);
  b.comm(0xA, {0, 1});
  b.comm(0xB, {1, 2});
  b.all_reduces(0xA, {0, 1}, 0, 20, 0, 1'000'000);
  b.all_reduces(0xB, {1, 2}, 0, 20, 500'000, 1'000'000);
  b.shift_clock(1, 50'000);
  b.shift_clock(2, -80'000);
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  EXPECT_NEAR(c.hosts[1].offset_ns, -50'000, 10);
  EXPECT_NEAR(c.hosts[2].offset_ns, 80'000, 10);
  EXPECT_EQ(c.hosts[2].method, "host-exit");
}

TEST(ClockAligner, UnnamedHostsAreTheirOwn) {
  JobBuilder b(2, 1);
  b.job.ranks[1].info.host.clear();
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  ASSERT_EQ(c.hosts.size(), 2u);
  EXPECT_EQ(c.hosts[1].host, "?rank1");
}

}  // namespace
}  // namespace ncclwatch::clock

namespace ncclwatch::clock {
namespace {

TEST(ClockAligner, ShiftBuriedInNoiseIsNotApplied) {
  // 8 samples scattered over +-50 ms around a 3 ms "offset": not told apart from none.
  testing::JobBuilder b(2, 2);
  b.comm(kComm, {0, 1});
  b.all_reduces(kComm, {0, 1}, 0, 8, 0, 100'000'000);
  const int64_t noise[8] = {-40'000'000, 30'000'000,  -20'000'000, 45'000'000,
                            3'000'000,   -35'000'000, 25'000'000,  10'000'000};
  for (int i = 0; i < 8; ++i) b.job.ranks[1].calls[i].exit_ns += noise[i];
  auto m = match::match_job(b.job);
  auto c = align_clocks(b.job, m);
  EXPECT_EQ(c.hosts[1].method, "host-exit (not significant: wall clock kept)");
  EXPECT_EQ(c.hosts[1].offset_ns, 0);
  EXPECT_GT(c.hosts[1].residual_ns, 10'000'000);
}

}  // namespace
}  // namespace ncclwatch::clock

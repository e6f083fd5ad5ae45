// PackedIntervalSet and PackedActivity (what a rank's digest holds): unpacked and clipped they
// are the sets packed, span for span, on random sets with every kind of gap (negative times,
// spans 1 ns apart, hours apart, across the marks every 64 spans), and packing saves what it is
// for: kernels microseconds apart take a few bytes a span instead of 16.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "analysis/packed_activity.h"
#include "analysis/packed_interval_set.h"

namespace ncclwatch::analysis {
namespace {

IntervalSet random_set(std::mt19937_64& rng, std::size_t spans, int64_t start) {
  std::uniform_int_distribution<int> kind(0, 9);
  std::vector<Interval> out;
  int64_t t = start;
  for (std::size_t k = 0; k < spans; ++k) {
    const int c = kind(rng);
    const int64_t gap = c == 0   ? 1
                        : c == 1 ? int64_t{3'600'000'000'000}
                                 : 1 + int64_t(rng() % 5000);
    const int64_t len = c == 2 ? 1 : 1 + int64_t(rng() % 200'000);
    t += gap;
    out.push_back({t, t + len});
    t += len;
  }
  return IntervalSet::from_sorted(out);
}

TEST(PackedIntervalSet, UnpacksToTheSetPacked) {
  std::mt19937_64 rng(7);
  for (std::size_t spans : {0, 1, 2, 63, 64, 65, 128, 1000}) {
    for (int64_t start : {int64_t{-5'000'000}, int64_t{0}, int64_t{36'000'000'000'000}}) {
      const IntervalSet set = random_set(rng, spans, start);
      const PackedIntervalSet packed(set);
      EXPECT_EQ(packed.size(), set.size());
      EXPECT_EQ(packed.empty(), set.empty());
      EXPECT_EQ(packed.unpack(), set) << spans << " spans from " << start;
      if (!set.empty()) {
        EXPECT_EQ(packed.front_begin(), set.spans().front().begin);
        EXPECT_EQ(packed.back_end(), set.spans().back().end);
      }
    }
  }
}

TEST(PackedIntervalSet, ClipIsTheSetsClipForAnyWindow) {
  std::mt19937_64 rng(11);
  const IntervalSet set = random_set(rng, 700, -1000);
  const PackedIntervalSet packed(set);
  const int64_t lo = set.spans().front().begin, hi = set.spans().back().end;
  std::vector<std::pair<int64_t, int64_t>> windows = {{lo - 10, lo},    {hi, hi + 10}, {lo, hi},
                                                      {lo - 1, hi + 1}, {5, 5},        {9, 3}};
  // Every span edge of a few spans around the marks, and random windows.
  for (std::size_t k : {0, 63, 64, 65, 127, 128, 699}) {
    const Interval& s = set.spans()[k];
    windows.push_back({s.begin, s.end});
    windows.push_back({s.begin + 1, s.end + 1});
    windows.push_back({s.begin - 1, s.begin});
    windows.push_back({s.end, s.end + 1'000'000});
  }
  std::uniform_int_distribution<int64_t> at(lo - 1000, hi + 1000);
  for (int i = 0; i < 500; ++i) {
    const int64_t a = at(rng), b = at(rng);
    windows.push_back({std::min(a, b), std::max(a, b)});
  }
  for (const auto& [from, to] : windows)
    EXPECT_EQ(packed.clip(from, to), set.clip(from, to)) << "[" << from << ", " << to << ")";
  EXPECT_TRUE(PackedIntervalSet().clip(0, 100).empty());
}

TEST(PackedIntervalSet, KernelsMicrosecondsApartTakeAFewBytesASpan) {
  std::vector<Interval> kernels;
  for (int64_t k = 0, t = 36'000'000'000'000; k < 10'000; ++k, t += 150'000)
    kernels.push_back({t, t + 148'000});  // 148 us kernels, 2 us apart
  const IntervalSet set = IntervalSet::from_sorted(kernels);
  const PackedIntervalSet packed(set);
  EXPECT_LT(packed.heap_bytes(), set.size() * 6);  // 16 bytes a span unpacked
  EXPECT_EQ(packed.unpack(), set);
}

RankActivity activity_with(std::mt19937_64& rng) {
  RankActivity a;
  a.compute = random_set(rng, 300, 1000);
  const int64_t lo = a.compute.spans().front().begin, hi = a.compute.spans().back().end;
  std::vector<Interval> comm, copies;
  for (std::size_t k = 0; k < a.compute.size(); ++k) {
    const Interval& s = a.compute.spans()[k];
    if (k % 4 == 0) comm.push_back({s.begin + 5, s.end + 1000});  // reaches into the gap after
    if (k % 7 == 0) copies.push_back({s.begin - 3, s.begin + 2});  // memcpy
  }
  a.comm = IntervalSet::from_sorted(comm);
  a.busy = a.comm.unite(a.compute).unite(IntervalSet::from_sorted(copies));
  a.source = CommSource::kNcclKernels;
  a.has_compute = true;
  a.first_ns = lo - 7;
  a.last_ns = hi + 9;
  return a;
}

void expect_same(const RankActivity& a, const RankActivity& b) {
  EXPECT_EQ(a.comm, b.comm);
  EXPECT_EQ(a.compute, b.compute);
  EXPECT_EQ(a.busy, b.busy);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.has_compute, b.has_compute);
  EXPECT_EQ(a.first_ns, b.first_ns);
  EXPECT_EQ(a.last_ns, b.last_ns);
}

TEST(PackedActivity, UnpacksToTheActivityPackedWithBusyFromItsParts) {
  std::mt19937_64 rng(3);
  const RankActivity a = activity_with(rng);
  const PackedActivity p = PackedActivity::pack(a);
  expect_same(p.unpack(), a);
  EXPECT_TRUE(p.busy_missing.empty());  // busy covers every kernel (RankActivity::of)
  EXPECT_FALSE(p.busy_extra.empty());   // the copies
  // A busy that leaves out part of a kernel (a node file may say anything) is still exact.
  RankActivity odd = a;
  odd.busy = a.busy.subtract(
      IntervalSet::from_sorted({{a.comm.spans()[3].begin + 10, a.comm.spans()[3].begin + 20}}));
  const PackedActivity q = PackedActivity::pack(odd);
  EXPECT_FALSE(q.busy_missing.empty());
  expect_same(q.unpack(), odd);
}

TEST(PackedActivity, ClipIsEverySetsClip) {
  std::mt19937_64 rng(5);
  const RankActivity a = activity_with(rng);
  const PackedActivity p = PackedActivity::pack(a);
  const int64_t lo = a.first_ns, hi = a.last_ns;
  std::uniform_int_distribution<int64_t> at(lo - 1000, hi + 1000);
  for (int i = 0; i < 200; ++i) {
    const int64_t x = at(rng), y = at(rng), from = std::min(x, y), to = std::max(x, y);
    const RankActivity c = p.clip(from, to);
    EXPECT_EQ(c.comm, a.comm.clip(from, to));
    EXPECT_EQ(c.compute, a.compute.clip(from, to));
    EXPECT_EQ(c.busy, a.busy.clip(from, to));
  }
}

}  // namespace
}  // namespace ncclwatch::analysis

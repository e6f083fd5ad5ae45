// Interval arithmetic: hand cases for every edge (empty, degenerate, touching, nested,
// reversed), then every operation against a brute-force bitmap on random inputs.
#include "analysis/interval_set.h"

#include <bitset>
#include <random>

#include <gtest/gtest.h>

namespace ncclwatch::analysis {
namespace {

using V = std::vector<Interval>;

IntervalSet S(V v) {
  return IntervalSet::from_unsorted(std::move(v));
}

TEST(IntervalSet, EmptyAndDegenerateIntervalsVanish) {
  EXPECT_TRUE(S({}).empty());
  EXPECT_TRUE(S({{5, 5}}).empty());  // zero length
  EXPECT_TRUE(S({{9, 3}}).empty());  // reversed: untrusted input
  EXPECT_EQ(S({{5, 5}, {1, 2}, {7, 6}}).spans(), (V{{1, 2}}));
  EXPECT_EQ(S({}).length(), 0);
}

TEST(IntervalSet, UnionMergesOverlappingTouchingAndNested) {
  // [0,10) and [5,15) overlap; [15,20) touches; [2,3) is nested; [30,40) stands alone.
  const IntervalSet s = S({{30, 40}, {5, 15}, {0, 10}, {15, 20}, {2, 3}});
  EXPECT_EQ(s.spans(), (V{{0, 20}, {30, 40}}));
  EXPECT_EQ(s.length(), 30);
}

TEST(IntervalSet, FromSortedEqualsFromUnsorted) {
  const V sorted{{0, 4}, {1, 2}, {3, 8}, {10, 12}, {12, 13}};
  EXPECT_EQ(IntervalSet::from_sorted(sorted), S(sorted));
}

TEST(IntervalSet, Intersect) {
  const IntervalSet a = S({{0, 10}, {20, 30}});
  const IntervalSet b = S({{5, 25}, {28, 40}});
  EXPECT_EQ(a.intersect(b).spans(), (V{{5, 10}, {20, 25}, {28, 30}}));
  EXPECT_EQ(b.intersect(a), a.intersect(b));
  EXPECT_TRUE(a.intersect(IntervalSet{}).empty());
  EXPECT_TRUE(S({{0, 5}}).intersect(S({{5, 9}})).empty());  // touching shares no time
  EXPECT_EQ(a.intersect(a), a);
}

TEST(IntervalSet, Subtract) {
  const IntervalSet a = S({{0, 10}, {20, 30}});
  EXPECT_EQ(a.subtract(S({{5, 25}})).spans(), (V{{0, 5}, {25, 30}}));
  EXPECT_EQ(a.subtract(S({{2, 3}, {4, 6}})).spans(), (V{{0, 2}, {3, 4}, {6, 10}, {20, 30}}));
  EXPECT_EQ(a.subtract(IntervalSet{}), a);
  EXPECT_TRUE(a.subtract(S({{-5, 50}})).empty());
  EXPECT_TRUE(IntervalSet{}.subtract(a).empty());
  EXPECT_EQ(a.subtract(S({{10, 20}})), a);  // only the gap
}

TEST(IntervalSet, UniteTwoSets) {
  EXPECT_EQ(S({{0, 2}, {8, 9}}).unite(S({{2, 4}, {6, 8}})).spans(), (V{{0, 4}, {6, 9}}));
  EXPECT_EQ(IntervalSet{}.unite(S({{1, 2}})).spans(), (V{{1, 2}}));
}

TEST(IntervalSet, ClipAndLengthWithin) {
  const IntervalSet a = S({{0, 10}, {20, 30}, {40, 50}});
  EXPECT_EQ(a.clip(5, 45).spans(), (V{{5, 10}, {20, 30}, {40, 45}}));
  EXPECT_EQ(a.length_within(5, 45), 20);
  EXPECT_EQ(a.length_within(10, 20), 0);
  EXPECT_EQ(a.length_within(45, 5), 0);  // reversed window
  EXPECT_TRUE(a.clip(11, 19).empty());
  // The cursor form over increasing windows gives the same answers.
  std::size_t hint = 0;
  EXPECT_EQ(a.length_within(0, 5, hint), 5);
  EXPECT_EQ(a.length_within(5, 25, hint), 10);
  EXPECT_EQ(a.length_within(25, 100, hint), 15);
}

// Brute force: a bitset of the unit cells [t, t+1) covered.
constexpr int kDomain = 96;
using Bits = std::bitset<kDomain>;

Bits bits_of(const V& v) {
  Bits b;
  for (const Interval& iv : v) {
    for (int64_t t = std::max<int64_t>(0, iv.begin); t < std::min<int64_t>(kDomain, iv.end); ++t)
      b.set(t);
  }
  return b;
}

V random_intervals(std::mt19937& rng) {
  std::uniform_int_distribution<int> count(0, 8), pos(0, kDomain - 1), len(-3, 20);
  V v;
  for (int i = count(rng); i > 0; --i) {
    const int b = pos(rng);
    v.push_back({b, std::min(kDomain, b + len(rng))});
  }
  return v;
}

void expect_canonical(const IntervalSet& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_LT(s.spans()[i].begin, s.spans()[i].end);
    if (i) {
      EXPECT_LT(s.spans()[i - 1].end, s.spans()[i].begin);  // disjoint and not touching
    }
  }
}

TEST(IntervalSet, MatchesBruteForceOnRandomInputs) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 3000; ++trial) {
    const V va = random_intervals(rng), vb = random_intervals(rng);
    const IntervalSet a = S(va), b = S(vb);
    const Bits ba = bits_of(va), bb = bits_of(vb);
    ASSERT_EQ(bits_of(a.spans()), ba);
    expect_canonical(a);
    const IntervalSet u = a.unite(b), i = a.intersect(b), d = a.subtract(b);
    expect_canonical(u);
    expect_canonical(i);
    expect_canonical(d);
    ASSERT_EQ(bits_of(u.spans()), ba | bb) << trial;
    ASSERT_EQ(bits_of(i.spans()), ba & bb) << trial;
    ASSERT_EQ(bits_of(d.spans()), ba & ~bb) << trial;
    ASSERT_EQ(static_cast<std::size_t>(a.length()), ba.count());
    std::uniform_int_distribution<int> pos(0, kDomain);
    const int from = pos(rng), to = pos(rng);
    Bits window;
    for (int t = from; t < to; ++t) window.set(t);
    ASSERT_EQ(static_cast<std::size_t>(a.length_within(from, to)), (ba & window).count());
    ASSERT_EQ(bits_of(a.clip(from, to).spans()), ba & window);
  }
}

}  // namespace
}  // namespace ncclwatch::analysis

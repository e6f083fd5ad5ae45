// The collector's one median (model/median.h) and its checked time arithmetic
// (model/saturating.h).
#include "model/median.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "model/saturating.h"

namespace ncclwatch::model {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(Median, OddCountIsTheMiddleValue) {
  EXPECT_EQ(median(std::vector<int64_t>{9, 1, 5}), 5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{3.5, -1.0, 2.0, 8.0, 0.5}), 2.0);
}

TEST(Median, EvenCountIsTheMeanOfTheTwoMiddleValues) {
  EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  // Integers round down (floor), negative values included.
  EXPECT_EQ(median(std::vector<int64_t>{4, 1, 3, 2}), 2);
  EXPECT_EQ(median(std::vector<int64_t>{-4, -1, -3, -2}), -3);
  EXPECT_EQ(median(std::vector<uint64_t>{10, 20}), 15u);
}

TEST(Median, EmptyIsZero) {
  EXPECT_EQ(median(std::vector<int64_t>{}), 0);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{}), 0.0);
  EXPECT_EQ(median_of_sorted(std::span<const int64_t>{}), 0);
}

TEST(Median, ExtremeValuesDoNotOverflow) {
  EXPECT_EQ(median(std::vector<int64_t>{kMax, kMax - 2}), kMax - 1);
  EXPECT_EQ(median(std::vector<int64_t>{kMin, kMax}), -1);  // floor(-0.5)
  EXPECT_EQ(median(std::vector<int64_t>{kMin, kMin}), kMin);
}

TEST(Median, InPlaceAndSortedAgreeWithTheCopy) {
  std::vector<int64_t> v{7, 3, 11, 5, 2, 13};
  const int64_t by_copy = median(v);
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(by_copy, 6);
  EXPECT_EQ(median_of_sorted(std::span<const int64_t>(sorted)), by_copy);
  EXPECT_EQ(median_in_place(std::span<int64_t>(v)), by_copy);
}

TEST(Saturating, ClampsInsteadOfOverflowing) {
  EXPECT_EQ(sat_add(kMax, 1), kMax);
  EXPECT_EQ(sat_add(kMin, -1), kMin);
  EXPECT_EQ(sat_sub(kMin, 1), kMin);
  EXPECT_EQ(sat_sub(kMax, -1), kMax);
  EXPECT_EQ(sat_neg(kMin), kMax);
  EXPECT_EQ(sat_abs(kMin), kMax);
  EXPECT_EQ(sat_mul(kMax, 2), kMax);
  EXPECT_EQ(sat_mul(kMax, -2), kMin);
  EXPECT_EQ(sat_add(40, 2), 42);
  EXPECT_EQ(sat_sub(40, 42), -2);
}

}  // namespace
}  // namespace ncclwatch::model

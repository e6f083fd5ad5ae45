#include "clock/robust_estimate.h"

#include <gtest/gtest.h>

namespace ncclwatch::clock {

TEST(RobustEstimate, RejectsOutliers) {
  std::vector<int64_t> s = {1000, 1010, 990, 1005, 995, 1002, 998, 500'000, -400'000};
  RobustEstimate e = robust_estimate(s);
  EXPECT_EQ(e.rejected, 2u);
  EXPECT_EQ(e.kept, 7u);
  EXPECT_NEAR(e.median, 1000, 5);
  EXPECT_LT(e.spread, 20);
}

TEST(RobustEstimate, EvenCountAndEmpty) {
  std::vector<int64_t> s = {10, 20};
  EXPECT_EQ(robust_estimate(s, 100).median, 15);
  std::vector<int64_t> none;
  RobustEstimate e = robust_estimate(none);
  EXPECT_EQ(e.kept, 0u);
  EXPECT_EQ(e.median, 0);
}

TEST(RobustEstimate, SamplesSpanningTheWholeInt64RangeSaturate) {
  std::vector<int64_t> s = {INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX};
  RobustEstimate e = robust_estimate(s);
  EXPECT_EQ(e.kept + e.rejected, 4u);
  EXPECT_GE(e.spread, 0);
  EXPECT_LE(e.median, INT64_MAX);
  std::vector<int64_t> two = {INT64_MIN, INT64_MAX};
  EXPECT_NEAR(static_cast<double>(robust_estimate(two).median), 0.0, 1.0);  // midpoint -0.5
}

}  // namespace ncclwatch::clock

// The one robust spread (model/robust_spread.h) and the saturating double -> int64 conversion
// (model/saturating.h) on what an untrusted trace can hold: values at the ends of the int64
// range, and NaN / infinities in the real-valued samples. Run under UBSan by scripts/test.sh
// (build-asan): a conversion out of range is undefined behaviour there, and aborts.
#include "model/robust_spread.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "model/saturating.h"

namespace ncclwatch::model {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(SatInt64, ClampsToTheRangeAndTakesNaNAsZero) {
  EXPECT_EQ(sat_int64(0.0), 0);
  EXPECT_EQ(sat_int64(123.9), 123);
  EXPECT_EQ(sat_int64(-123.9), -123);
  EXPECT_EQ(sat_int64(9.2e18), 9'200'000'000'000'000'000);
  EXPECT_EQ(sat_int64(9223372036854775808.0), kMax);  // 2^63: one past the range
  EXPECT_EQ(sat_int64(1.5 * 9.3e18), kMax);
  EXPECT_EQ(sat_int64(-9223372036854775808.0), kMin);  // -2^63: in the range
  EXPECT_EQ(sat_int64(-1e30), kMin);
  EXPECT_EQ(sat_int64(kInf), kMax);
  EXPECT_EQ(sat_int64(-kInf), kMin);
  EXPECT_EQ(sat_int64(kNaN), 0);
}

TEST(RobustSpread, IsSigmaForNormalNoiseAndIgnoresOneOutlier) {
  // MAD of {-2,-1,0,1,2} is 1; an outlier in place of one value leaves it at 1.
  EXPECT_EQ(robust_spread(std::vector<int64_t>{-2000, -1000, 0, 1000, 2000}), 1482);
  EXPECT_EQ(robust_spread(std::vector<int64_t>{-2000, -1000, 0, 1000, 2'000'000'000}), 1482);
  EXPECT_DOUBLE_EQ(robust_spread(std::vector<double>{-2, -1, 0, 1, 2}), 1.4826);
  EXPECT_EQ(robust_spread(std::vector<int64_t>{}), 0);
  EXPECT_EQ(robust_spread(std::vector<int64_t>{kMax}), 0);
  EXPECT_EQ(robust_spread(std::vector<double>{kInf}), 0);
}

TEST(RobustSpread, AroundAKnownMedianIsTheSame) {
  const std::vector<int64_t> v = {5, 1, 9, 3, 7};
  EXPECT_EQ(robust_spread(std::span<const int64_t>(v), 5), robust_spread(v));
}

TEST(RobustSpread, SaturatesAtTheEndsOfTheInt64Range) {
  // Deviations of 2^63 and more saturate; 1.4826 x INT64_MAX is beyond the range: clamped, where
  // a plain conversion is undefined (lateness from a corrupt or hostile trace).
  EXPECT_EQ(robust_spread(std::vector<int64_t>{kMin, kMin, kMax, kMax}), kMax);
  EXPECT_EQ(robust_spread(std::vector<int64_t>{kMin, 0, kMax}), kMax);
  EXPECT_EQ(robust_spread(std::vector<int64_t>{kMin, kMin + 1, kMin + 2}), 1);
  EXPECT_EQ(robust_spread(std::span<const int64_t>(std::vector<int64_t>{kMax, kMax}), kMin), kMax);
  // 6.3e18 x 1.4826 is 9.34e18: past INT64_MAX only after the scaling.
  EXPECT_EQ(
      robust_spread(std::vector<int64_t>{-6'300'000'000'000'000'000, 0, 6'300'000'000'000'000'000}),
      kMax);
}

TEST(RobustSpread, RealSamplesWithNaNAndInfinities) {
  // NaN samples carry nothing: left out.
  EXPECT_DOUBLE_EQ(robust_spread(std::vector<double>{-2, kNaN, -1, 0, kNaN, 1, 2}), 1.4826);
  EXPECT_EQ(robust_spread(std::vector<double>{kNaN, kNaN, 3}), 0);
  // An infinity in the minority is an outlier like any other.
  EXPECT_DOUBLE_EQ(robust_spread(std::vector<double>{-2, -1, 0, 1, kInf}), 1.4826);
  EXPECT_DOUBLE_EQ(robust_spread(std::vector<double>{-kInf, -1, 0, 1, 2}), 1.4826);
  // An infinite median: an infinite spread, never NaN.
  EXPECT_EQ(robust_spread(std::vector<double>{kInf, kInf, 0}), kInf);
  EXPECT_EQ(robust_spread(std::vector<double>{-kInf, -kInf, kInf}), kInf);
  // Huge finite values whose deviations overflow to infinity.
  const double big = std::numeric_limits<double>::max();
  EXPECT_EQ(robust_spread(std::vector<double>{-big, 0, big}), kInf);
  EXPECT_EQ(sat_int64(robust_spread(std::vector<double>{-big, 0, big})), kMax);
}

}  // namespace
}  // namespace ncclwatch::model

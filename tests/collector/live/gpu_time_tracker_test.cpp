#include "live/gpu_time_tracker.h"

#include <gtest/gtest.h>

namespace ncclwatch::live {
namespace {

constexpr int64_t kMs = 1'000'000;
using Kind = GpuTimeTracker::Kind;

TEST(GpuTimeTracker, SplitsBusyComputeExposedCommAndIdle) {
  GpuTimeTracker t(/*lag_ns=*/0);
  t.add(0, 10 * kMs, Kind::kCompute);
  t.add(5 * kMs, 15 * kMs, Kind::kComm);    // 5 ms hidden behind compute, 5 ms exposed
  t.add(20 * kMs, 22 * kMs, Kind::kOther);  // a memcpy after 5 ms idle
  t.flush();
  EXPECT_DOUBLE_EQ(t.busy_s(), 0.017);
  EXPECT_DOUBLE_EQ(t.compute_s(), 0.010);
  EXPECT_DOUBLE_EQ(t.exposed_comm_s(), 0.005);
  EXPECT_DOUBLE_EQ(t.idle_s(), 0.005);
  EXPECT_EQ(t.pending(), 0u);
}

TEST(GpuTimeTracker, HoldsTheLagWindowAndSweepsEachPartOnce) {
  GpuTimeTracker t(/*lag_ns=*/10 * kMs);
  t.add(0, 10 * kMs, Kind::kCompute);
  t.add(10 * kMs, 30 * kMs, Kind::kComm);
  t.advance();  // horizon 20 ms: comm counted up to 20 only
  EXPECT_DOUBLE_EQ(t.busy_s(), 0.020);
  EXPECT_DOUBLE_EQ(t.exposed_comm_s(), 0.010);
  EXPECT_EQ(t.pending(), 1u);
  // Arrives late but inside the lag: counted fully.
  t.add(25 * kMs, 26 * kMs, Kind::kCompute);
  t.add(40 * kMs, 50 * kMs, Kind::kCompute);
  t.advance();  // horizon 40 ms
  EXPECT_DOUBLE_EQ(t.busy_s(), 0.030);
  EXPECT_DOUBLE_EQ(t.compute_s(), 0.011);
  EXPECT_DOUBLE_EQ(t.exposed_comm_s(), 0.019);
  EXPECT_DOUBLE_EQ(t.idle_s(), 0.010);
  // Too late: only its part after the horizon counts, and it is counted as late.
  t.add(35 * kMs, 45 * kMs, Kind::kComm);
  EXPECT_EQ(t.late_intervals(), 1u);
  t.flush();
  EXPECT_DOUBLE_EQ(t.busy_s(), 0.040);
  EXPECT_DOUBLE_EQ(t.idle_s(), 0.010);
  EXPECT_NEAR(t.busy_s() + t.idle_s(), 0.050, 1e-12);  // the whole timeline, once
}

TEST(GpuTimeTracker, MemoryStaysBoundedUnderABurst) {
  GpuTimeTracker t(/*lag_ns=*/INT64_MAX / 4, /*max_pending=*/100);
  for (int i = 0; i < 10000; ++i) t.add(i * kMs, i * kMs + kMs / 2, Kind::kCompute);
  EXPECT_LE(t.pending(), 101u);
  t.flush();
  EXPECT_NEAR(t.compute_s(), 10000 * 0.0005, 1e-9);
}

}  // namespace
}  // namespace ncclwatch::live

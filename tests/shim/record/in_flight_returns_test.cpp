// The returns of calls reported in flight (record/in_flight_returns.h): matched by thread and
// entry time, once; a call reported twice (drain, then watchdog) is one; the oldest goes when
// more calls are reported than threads can be in flight.
#include "record/in_flight_returns.h"

#include <gtest/gtest.h>

namespace ncclwatch::shim {
namespace {

format::InFlightRecord in_flight(uint32_t tid, int64_t enter_ns) {
  format::InFlightRecord f{};
  f.prefix.kind = format::RecordKind::kInFlight;
  f.prefix.tid = tid;
  f.entry.t_enter_ns = enter_ns;
  f.t_seen_ns = enter_ns + 1'000'000'000;
  return f;
}

format::Record call(uint32_t tid, int64_t enter_ns) {
  format::Record r{};
  r.call.prefix.kind = format::RecordKind::kCall;
  r.call.prefix.tid = tid;
  r.call.t_enter_ns = enter_ns;
  return r;
}

TEST(InFlightReturns, TheReturnOfAReportedCallIsKeptOnce) {
  InFlightReturns returns;
  EXPECT_FALSE(returns.take(call(7, 100)));  // nothing reported
  returns.reported(in_flight(7, 100));
  returns.reported(in_flight(7, 100));  // the watchdog's record of the same call
  returns.reported(in_flight(8, 100));
  EXPECT_EQ(returns.size(), 2u);
  EXPECT_FALSE(returns.take(call(7, 101)));  // a later call of that thread
  EXPECT_FALSE(returns.take(call(9, 100)));  // another thread
  format::Record kernel = call(7, 100);
  kernel.prefix.kind = format::RecordKind::kKernel;  // same fields, not a return
  EXPECT_FALSE(returns.take(kernel));
  EXPECT_TRUE(returns.take(call(7, 100)));
  EXPECT_FALSE(returns.take(call(7, 100)));
  EXPECT_TRUE(returns.take(call(8, 100)));
  EXPECT_EQ(returns.size(), 0u);
}

TEST(InFlightReturns, TheOldestIsForgottenBeyondOneCallPerSlot) {
  InFlightReturns returns;
  const auto n = static_cast<uint32_t>(InFlightReturns::kCapacity);
  for (uint32_t t = 1; t <= n + 2; ++t) returns.reported(in_flight(t, 1000 + t));
  EXPECT_EQ(returns.size(), InFlightReturns::kCapacity);
  EXPECT_FALSE(returns.take(call(1, 1001)));
  EXPECT_FALSE(returns.take(call(2, 1002)));
  // The rest, in any order (taking one moves another in its place).
  EXPECT_TRUE(returns.take(call(n + 2, 1000 + n + 2)));
  for (uint32_t t = 3; t <= n + 1; ++t) EXPECT_TRUE(returns.take(call(t, 1000 + t))) << t;
  EXPECT_EQ(returns.size(), 0u);
}

}  // namespace
}  // namespace ncclwatch::shim

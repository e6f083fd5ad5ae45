// The ring of detail left out (record/recent_records.h): only detail kinds, the oldest dropped
// when full, handed over oldest first, and the return of a reported call found and taken once.
#include "record/recent_records.h"

#include <gtest/gtest.h>

#include <vector>

namespace ncclwatch::shim {
namespace {

format::Record call(uint32_t tid, int64_t enter_ns) {
  format::Record r{};
  r.call.prefix.kind = format::RecordKind::kCall;
  r.call.prefix.tid = tid;
  r.call.t_enter_ns = enter_ns;
  r.call.t_exit_ns = enter_ns + 10;
  return r;
}

format::Record group_end(uint32_t tid, int64_t enter_ns) {
  format::Record r{};
  r.group.prefix.kind = format::RecordKind::kGroup;
  r.group.prefix.tid = tid;
  r.group.t_enter_ns = enter_ns;
  return r;
}

std::vector<int64_t> enters(RecentRecords& recent) {
  std::vector<int64_t> out;
  recent.take_all([&](const format::Record& r) { out.push_back(r.call.t_enter_ns); });
  return out;
}

TEST(RecentRecords, HoldsTheNewestDetailOldestFirst) {
  RecentRecords recent(3);
  format::Record clock{};
  clock.prefix.kind = format::RecordKind::kClock;
  recent.hold(clock);  // always tier: never held
  EXPECT_EQ(recent.size(), 0u);
  EXPECT_EQ(recent.oldest_time(), INT64_MIN);
  for (int64_t t : {10, 50, 30, 40}) recent.hold(call(7, t));
  EXPECT_EQ(recent.size(), 3u);
  EXPECT_EQ(recent.oldest_time(), 30);  // 10 was dropped; the earliest time, not the first held
  EXPECT_EQ(enters(recent), (std::vector<int64_t>{50, 30, 40}));
  EXPECT_EQ(recent.size(), 0u);
  EXPECT_TRUE(enters(recent).empty());
}

TEST(RecentRecords, NoCapacityHoldsNothing) {
  RecentRecords recent;
  recent.hold(call(7, 10));
  EXPECT_EQ(recent.size(), 0u);
  format::Record out{};
  EXPECT_FALSE(recent.take_return(7, 10, &out));
}

TEST(RecentRecords, TheReturnOfAReportedCallIsTakenOnce) {
  RecentRecords recent(8);
  recent.hold(call(7, 10));
  recent.hold(call(8, 20));
  recent.hold(group_end(9, 30));
  recent.hold(call(7, 40));
  format::Record out{};
  EXPECT_FALSE(recent.take_return(8, 10, &out));  // another thread's entry time
  EXPECT_FALSE(recent.take_return(7, 11, &out));
  ASSERT_TRUE(recent.take_return(8, 20, &out));
  EXPECT_EQ(out.call.t_exit_ns, 30);
  EXPECT_FALSE(recent.take_return(8, 20, &out));  // taken
  ASSERT_TRUE(recent.take_return(9, 30, &out));
  EXPECT_EQ(out.prefix.kind, format::RecordKind::kGroup);
  // A hang's window gets the rest, without what was taken.
  EXPECT_EQ(enters(recent), (std::vector<int64_t>{10, 40}));
}

}  // namespace
}  // namespace ncclwatch::shim

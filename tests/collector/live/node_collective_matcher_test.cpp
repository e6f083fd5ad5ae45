#include "live/node_collective_matcher.h"

#include <gtest/gtest.h>

namespace ncclwatch::live {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(NodeCollectiveMatcher, FastestKernelIsTransferTheRestIsWaiting) {
  NodeCollectiveMatcher m;
  for (int i = 0; i < 3; ++i) m.add_member(7);
  std::vector<NodeCollectiveMatcher::Share> out;
  // Ranks 0 and 1 start at 0 and wait for rank 2, which starts 4 ms later; transfer 1 ms.
  m.add(0, 7, 1, 0, 5 * kMs, out);
  m.add(1, 7, 1, 1 * kMs, 5 * kMs, out);
  EXPECT_TRUE(out.empty());
  m.add(2, 7, 1, 4 * kMs, 5 * kMs, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_DOUBLE_EQ(out[0].wait_s, 0.004);
  EXPECT_DOUBLE_EQ(out[1].wait_s, 0.003);
  EXPECT_DOUBLE_EQ(out[2].wait_s, 0.0);
  for (const auto& s : out) EXPECT_DOUBLE_EQ(s.transfer_s, 0.001);
  EXPECT_DOUBLE_EQ(out[2].lateness_s, 0.004);
  EXPECT_DOUBLE_EQ(out[0].lateness_s, 0.0);
  EXPECT_EQ(m.decided(), 1u);
  EXPECT_EQ(m.pending(), 0u);
}

TEST(NodeCollectiveMatcher, AMissingMemberIsDecidedWithThoseThereOnceTheCommMovedOn) {
  NodeCollectiveMatcher m(/*seq_window=*/4, /*max_pending=*/1000);
  for (int i = 0; i < 3; ++i) m.add_member(9);
  std::vector<NodeCollectiveMatcher::Share> out;
  for (uint64_t seq = 0; seq < 20; ++seq) {
    m.add(0, 9, seq, 0, 2 * kMs, out);
    m.add(1, 9, seq, 0, 3 * kMs, out);  // member 2's records never come (it died)
  }
  EXPECT_LE(m.pending(), 5u);
  EXPECT_EQ(m.partial(), m.decided());
  EXPECT_GE(m.decided(), 15u);
  ASSERT_FALSE(out.empty());
  EXPECT_DOUBLE_EQ(out[1].wait_s, 0.001);
}

TEST(NodeCollectiveMatcher, OneMemberOnThisNodeIsAllTransferAndBoundedPending) {
  NodeCollectiveMatcher m(/*seq_window=*/1u << 30, /*max_pending=*/8);
  m.add_member(1);
  std::vector<NodeCollectiveMatcher::Share> out;
  m.add(0, 1, 0, 0, kMs, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0].transfer_s, 0.001);
  // A comm whose member count is unknown never completes: the oldest are forced out.
  for (uint64_t seq = 0; seq < 100; ++seq) m.add(0, 2, seq, 0, kMs, out);
  EXPECT_LE(m.pending(), 8u);
  EXPECT_GE(m.unmatched(), 90u);
}

}  // namespace
}  // namespace ncclwatch::live

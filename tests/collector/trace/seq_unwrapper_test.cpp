#include "trace/seq_unwrapper.h"

#include <gtest/gtest.h>

namespace ncclwatch::trace {
namespace {

using Lane = SeqUnwrapper::Lane;

TEST(SeqUnwrapper, CrossesTwoToThe32) {
  SeqUnwrapper u;
  uint64_t expected = 0xFFFFFFF0ULL;
  for (int i = 0; i < 40; ++i, ++expected) {
    EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, static_cast<uint32_t>(expected)), expected);
  }
  EXPECT_GT(expected, 1ULL << 32);
}

TEST(SeqUnwrapper, SmallReorderAcrossTheWrap) {
  SeqUnwrapper u;
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 0xFFFFFFFEu), 0xFFFFFFFEULL);
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 0x00000001u), 0x100000001ULL);
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 0xFFFFFFFFu),
            0xFFFFFFFFULL);  // late, before the wrap
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 0x00000000u), 0x100000000ULL);
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 0x00000002u), 0x100000002ULL);
}

TEST(SeqUnwrapper, KeysAreIndependent) {
  SeqUnwrapper u;
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 0xFFFFFFFFu), 0xFFFFFFFFULL);
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 0u), 0x100000000ULL);
  // Another comm, and p2p lanes of the same comm, start over at their own values.
  EXPECT_EQ(u.unwrap(2, Lane::kCollective, -1, 0u), 0u);
  EXPECT_EQ(u.unwrap(1, Lane::kSend, 3, 5u), 5u);
  EXPECT_EQ(u.unwrap(1, Lane::kRecv, 3, 0xFFFFFFFFu), 0xFFFFFFFFULL);
  EXPECT_EQ(u.unwrap(1, Lane::kSend, 4, 0xFFFFFFFFu), 0xFFFFFFFFULL);
  EXPECT_EQ(u.unwrap(1, Lane::kRecv, 3, 1u), 0x100000001ULL);
  EXPECT_EQ(u.unwrap(1, Lane::kSend, 3, 6u), 6u);
}

TEST(SeqUnwrapper, NeverGoesBelowZero) {
  SeqUnwrapper u;
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 3u), 3u);
  EXPECT_EQ(u.unwrap(1, Lane::kCollective, -1, 0xFFFFFFFFu), 0xFFFFFFFFULL);  // not -1
}

}  // namespace
}  // namespace ncclwatch::trace

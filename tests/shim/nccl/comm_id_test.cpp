// Comm-id derivation (format.h rules) and the handle -> comm registry.
#include <gtest/gtest.h>

#include <cstring>

#include "nccl/comm_id.h"
#include "nccl/comm_registry.h"

namespace ncclwatch::shim {
namespace {

TEST(CommId, UniqueIdHashIsStableAndNeverZero) {
  char a[128], b[128];
  std::memset(a, 7, sizeof a);
  std::memcpy(b, a, sizeof b);
  EXPECT_EQ(comm_id_from_unique_id(a, sizeof a), comm_id_from_unique_id(b, sizeof b));
  b[127] ^= 1;
  EXPECT_NE(comm_id_from_unique_id(a, sizeof a), comm_id_from_unique_id(b, sizeof b));
  EXPECT_NE(comm_id_from_unique_id(a, sizeof a), 0u);
}

TEST(CommId, SplitDependsOnParentIndexAndColor) {
  uint64_t base = comm_id_for_split(42, 0, 1);
  EXPECT_EQ(base, comm_id_for_split(42, 0, 1));
  EXPECT_NE(base, comm_id_for_split(42, 0, 2));
  EXPECT_NE(base, comm_id_for_split(42, 1, 1));
  EXPECT_NE(base, comm_id_for_split(43, 0, 1));
}

TEST(CommId, ShrinkUsesSortedExcludedRanks) {
  int x[] = {5, 1, 3}, y[] = {1, 3, 5}, z[] = {1, 3};
  EXPECT_EQ(comm_id_for_shrink(9, 2, x, 3), comm_id_for_shrink(9, 2, y, 3));
  EXPECT_NE(comm_id_for_shrink(9, 2, y, 3), comm_id_for_shrink(9, 2, z, 2));
  EXPECT_NE(comm_id_for_shrink(9, 2, y, 3), comm_id_for_shrink(9, 3, y, 3));
  EXPECT_NE(comm_id_for_shrink(9, 0, nullptr, 0), comm_id_for_split(9, 0, 0));
}

TEST(CommId, InitAllPerProcessCounter) {
  EXPECT_NE(comm_id_for_init_all(100, 0), comm_id_for_init_all(100, 1));
  EXPECT_NE(comm_id_for_init_all(100, 0), comm_id_for_init_all(101, 0));
}

TEST(CommRegistry, AddFindRemoveReuse) {
  CommRegistry& reg = CommRegistry::instance();
  int handle_storage[2];
  void* h = &handle_storage[0];
  EXPECT_EQ(reg.find(h), nullptr);
  CommInfo* info = reg.add(h, 11, 0, 4, 2, 0, false);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(reg.find(h), info);
  EXPECT_EQ(info->nranks, 4);
  ASSERT_NE(info->send_seq, nullptr);
  EXPECT_EQ(info->send_seq[3].fetch_add(1), 0u);
  reg.remove(h);
  EXPECT_EQ(reg.find(h), nullptr);
  CommInfo* again = reg.add(h, 12, 11, 2, 0, 0, true);  // the handle address reused
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(reg.find(h)->id, 12u);
  EXPECT_EQ(reg.find(&handle_storage[1]), nullptr);
}

}  // namespace
}  // namespace ncclwatch::shim

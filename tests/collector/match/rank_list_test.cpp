#include "match/rank_list.h"

#include <gtest/gtest.h>

#include "match/func_name.h"

namespace ncclwatch::match {

TEST(RankList, CollapsesRunsAndSorts) {
  EXPECT_EQ(format_rank_list({7, 0, 1, 2, 3, 4, 6}), "0-4,6-7");
  EXPECT_EQ(format_rank_list({5}), "5");
  EXPECT_EQ(format_rank_list({}), "");
  EXPECT_EQ(format_rank_list({3, 3, 1}), "1,3");
  EXPECT_EQ(format_rank_list({-1, 2}), "2,?");
}

TEST(FuncName, NamesUsersKnow) {
  EXPECT_STREQ(func_name(format::Func::kAllReduce), "all_reduce");
  EXPECT_STREQ(func_name(format::Func::kCommRevoke), "comm_revoke");
  EXPECT_STREQ(func_name(static_cast<format::Func>(200)), "unknown");
  EXPECT_EQ(datatype_name(9), "bfloat16");
  EXPECT_EQ(redop_name(255), "user");
}

}  // namespace ncclwatch::match

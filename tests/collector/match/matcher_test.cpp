#include "match/matcher.h"

#include <gtest/gtest.h>

#include "synthetic_job.h"

namespace ncclwatch::match {
namespace {

using format::Func;
using testing::JobBuilder;
constexpr uint64_t kComm = 0xC0FFEE;

TEST(Matcher, CleanRunMatchesEveryInstance) {
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  b.all_reduces(kComm, {0, 1, 2, 3}, 0, 100, 1'000'000, 100'000);
  model::MatchResult m = match_job(b.job);
  ASSERT_EQ(m.instances.size(), 100u);
  EXPECT_TRUE(m.incomplete.empty());
  EXPECT_TRUE(m.desyncs.empty());
  ASSERT_EQ(m.comms.size(), 1u);
  EXPECT_EQ(m.comms[0].nranks, 4);
  EXPECT_EQ(m.comms[0].ranks, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.comms[0].instances, 100u);
  for (std::size_t i = 0; i < m.instances.size(); ++i) {
    const auto& inst = m.instances[i];
    EXPECT_EQ(inst.seq, i);
    EXPECT_EQ(inst.func, Func::kAllReduce);
    ASSERT_EQ(inst.nmembers, 4u);
    for (uint32_t k = 0; k < 4; ++k) {
      const auto& mem = m.members[inst.first_member + k];
      EXPECT_EQ(mem.rank_index, k);
      EXPECT_EQ(b.job.ranks[k].calls[mem.call_index].seq, i);
    }
  }
}

TEST(Matcher, CallsOutOfSeqOrderStillMatch) {
  // Two threads on one rank can interleave: calls sorted by enter time, not by seq.
  JobBuilder b(2);
  b.comm(kComm, {0, 1});
  b.call(0, kComm, 1, Func::kAllReduce, 8, 10, 20);
  b.call(0, kComm, 0, Func::kAllReduce, 8, 11, 21);
  b.call(1, kComm, 0, Func::kAllReduce, 8, 10, 20);
  b.call(1, kComm, 1, Func::kAllReduce, 8, 11, 21);
  model::MatchResult m = match_job(b.job);
  ASSERT_EQ(m.instances.size(), 2u);
  EXPECT_EQ(m.members[m.instances[0].first_member].call_index, 1u);
}

TEST(Matcher, HangNamesTheMissingRankAndWhoWaited) {
  JobBuilder b(8);
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  b.comm(kComm, all);
  b.all_reduces(kComm, all, 0, 4812, 0, 1000);
  // Everyone but rank 5 enters #4812 and never returns.
  for (int r : all) {
    if (r != 5) b.call(r, kComm, 4812, Func::kAllReduce, 1024, 5'000'000, 0);
  }
  model::MatchResult m = match_job(b.job);
  EXPECT_EQ(m.instances.size(), 4812u);
  ASSERT_EQ(m.incomplete.size(), 1u);
  const auto& inc = m.incomplete[0];
  EXPECT_EQ(inc.comm_id, kComm);
  EXPECT_EQ(inc.seq, 4812u);
  EXPECT_EQ(inc.count, 1u);
  EXPECT_EQ(inc.func, Func::kAllReduce);
  EXPECT_EQ(inc.missing_ranks, (std::vector<int32_t>{5}));
  EXPECT_EQ(inc.present_ranks, (std::vector<int32_t>{0, 1, 2, 3, 4, 6, 7}));
  EXPECT_EQ(m.comms[0].incomplete, 1u);
}

TEST(Matcher, ARankThatStoppedEarlyIsOneRunNotThousands) {
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  b.all_reduces(kComm, {0, 1, 2, 3}, 0, 10, 0, 1000);
  b.all_reduces(kComm, {0, 1, 3}, 10, 5000, 20'000, 1000);  // rank 2 gone (drops, or a dead rank)
  model::MatchResult m = match_job(b.job);
  EXPECT_EQ(m.instances.size(), 10u);
  ASSERT_EQ(m.incomplete.size(), 1u);
  EXPECT_EQ(m.incomplete[0].seq, 10u);
  EXPECT_EQ(m.incomplete[0].seq_last, 5009u);
  EXPECT_EQ(m.incomplete[0].count, 5000u);
  EXPECT_EQ(m.incomplete[0].missing_ranks, (std::vector<int32_t>{2}));
}

TEST(Matcher, IncompleteRunsAreCappedKeepingTheLatest) {
  JobBuilder b(2);
  b.comm(kComm, {0, 1});
  // Alternate which rank is missing: every instance is its own run.
  for (uint64_t s = 0; s < 200; ++s)
    b.call(static_cast<int>(s % 2), kComm, s, Func::kAllReduce, 4, 0, 1);
  MatchOptions opt;
  opt.max_incomplete_runs_per_comm = 20;
  model::MatchResult m = match_job(b.job, opt);
  ASSERT_EQ(m.incomplete.size(), 20u);
  EXPECT_EQ(m.incomplete.front().seq, 0u);
  EXPECT_EQ(m.incomplete.back().seq, 199u);
  EXPECT_EQ(m.comms[0].incomplete, 200u);
}

TEST(Matcher, DesyncAgainstTheMajority) {
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  b.all_reduces(kComm, {0, 1, 2, 3}, 0, 3, 0, 1000);
  for (int r = 0; r < 4; ++r)
    b.call(r, kComm, 3, Func::kAllReduce, r == 2 ? 2048 : 1024, 5000, 6000);
  model::MatchResult m = match_job(b.job);
  ASSERT_EQ(m.desyncs.size(), 1u);
  EXPECT_EQ(m.desyncs[0].seq, 3u);
  EXPECT_EQ(m.desyncs[0].comm_id, kComm);
  EXPECT_EQ(m.desyncs[0].ranks, (std::vector<int32_t>{2}));
  EXPECT_EQ(m.desyncs[0].what, "count 2048 vs 1024 (majority)");
  // Everyone entered: the instance itself is complete, with the majority's size.
  EXPECT_EQ(m.instances.size(), 4u);
  EXPECT_EQ(m.instances[3].bytes, 4096u);
}

TEST(Matcher, DesyncOfOpDatatypeAndRoot) {
  JobBuilder b(3);
  b.comm(kComm, {0, 1, 2});
  for (int r = 0; r < 3; ++r) {
    auto& c = b.call(r, kComm, 0, r == 1 ? Func::kAllGather : Func::kAllReduce, 16, 0, 10);
    if (r == 2) c.datatype = 9;
  }
  for (int r = 0; r < 3; ++r)
    b.call(r, kComm, 1, Func::kBroadcast, 16, 20, 30).peer = r == 0 ? 1 : 0;
  model::MatchResult m = match_job(b.job);
  ASSERT_EQ(m.desyncs.size(), 2u);
  EXPECT_EQ(m.desyncs[0].ranks, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(m.desyncs[0].what,
            "op all_gather vs all_reduce (majority); datatype bfloat16 vs float32 (majority)");
  EXPECT_EQ(m.desyncs[1].ranks, (std::vector<int32_t>{0}));
  EXPECT_EQ(m.desyncs[1].what, "root 1 vs 0 (majority)");
}

TEST(Matcher, CommSizeDisagreementAndUntracedMembers) {
  JobBuilder b(3);
  b.comm(kComm, {0, 1, 2});
  b.job.ranks[2].comms[0].nranks = 4;  // one rank believes the comm is bigger
  uint64_t other = 0xBEEF;
  b.comm(other, {0, 1});
  for (auto& c : b.job.ranks[0].comms) c.nranks = c.id == other ? 3 : c.nranks;
  b.job.ranks[1].comms[1].nranks = 3;  // both members say 3, only two have traces
  model::MatchResult m = match_job(b.job);
  ASSERT_EQ(m.comms.size(), 2u);
  EXPECT_EQ(m.comms[0].id, kComm);
  EXPECT_TRUE(m.comms[0].size_disagreement);
  EXPECT_EQ(m.comms[0].nranks, 3);
  EXPECT_EQ(m.comms[0].untraced, 0);
  EXPECT_FALSE(m.comms[1].size_disagreement);
  EXPECT_EQ(m.comms[1].nranks, 3);
  EXPECT_EQ(m.comms[1].untraced, 1);
}

TEST(Matcher, SubCommsMatchSeparately) {
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  b.comm(0xA, {0, 2});
  b.comm(0xB, {1, 3});
  b.all_reduces(0xA, {0, 2}, 0, 5, 0, 100);
  b.all_reduces(0xB, {1, 3}, 0, 7, 0, 100);
  model::MatchResult m = match_job(b.job);
  EXPECT_EQ(m.instances.size(), 12u);
  EXPECT_TRUE(m.incomplete.empty());
  ASSERT_EQ(m.comms.size(), 3u);
  EXPECT_EQ(m.comms[0].id, kComm);
  EXPECT_EQ(m.comms[0].instances, 0u);
}

TEST(Matcher, SparseAndHugeSeqsCostNoMemory) {
  JobBuilder b(2);
  b.comm(kComm, {0, 1});
  for (uint64_t s : {uint64_t{0}, uint64_t{1} << 40, (uint64_t{1} << 62) + 5}) {
    b.call(0, kComm, s, Func::kAllReduce, 4, 0, 1);
    b.call(1, kComm, s, Func::kAllReduce, 4, 0, 1);
  }
  b.call(1, kComm, 0, Func::kAllReduce, 4, 0, 1);  // a duplicate seq on rank 1
  model::MatchResult m = match_job(b.job);
  EXPECT_EQ(m.instances.size(), 3u);
  EXPECT_EQ(m.comms[0].duplicate_seqs, 1u);
}

TEST(Matcher, SendRecvPairsAndUnmatched) {
  JobBuilder b(3);
  b.comm(kComm, {0, 1, 2});
  // 0 -> 1 twice, 1 -> 2 once; rank 2 posts a recv from 0 that nobody sends.
  b.call(0, kComm, 0, Func::kSend, 10, 0, 5).peer = 1;
  b.call(0, kComm, 1, Func::kSend, 10, 6, 9).peer = 1;
  b.call(1, kComm, 0, Func::kRecv, 10, 0, 5).peer = 0;
  b.call(1, kComm, 1, Func::kRecv, 20, 6, 9).peer = 0;  // count mismatch
  b.call(1, kComm, 0, Func::kSend, 10, 10, 12).peer = 2;
  b.call(2, kComm, 0, Func::kRecv, 10, 10, 12).peer = 1;
  b.call(2, kComm, 0, Func::kRecv, 10, 13, 0).peer = 0;
  model::MatchResult m = match_job(b.job);
  ASSERT_EQ(m.instances.size(), 3u);
  for (const auto& inst : m.instances) {
    EXPECT_EQ(inst.func, Func::kSend);
    ASSERT_EQ(inst.nmembers, 2u);
    const auto& s = m.members[inst.first_member];
    const auto& r = m.members[inst.first_member + 1];
    EXPECT_EQ(b.job.ranks[s.rank_index].calls[s.call_index].func, Func::kSend);
    EXPECT_EQ(b.job.ranks[r.rank_index].calls[r.call_index].func, Func::kRecv);
  }
  ASSERT_EQ(m.desyncs.size(), 1u);
  EXPECT_EQ(m.desyncs[0].ranks, (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(m.incomplete.size(), 1u);
  EXPECT_EQ(m.incomplete[0].func, Func::kRecv);
  EXPECT_EQ(m.incomplete[0].present_ranks, (std::vector<int32_t>{2}));
  EXPECT_EQ(m.incomplete[0].missing_ranks, (std::vector<int32_t>{0}));
}

TEST(Matcher, CallsWithoutCommRecordsStillMatch) {
  JobBuilder b(2);
  b.all_reduces(kComm, {0, 1}, 0, 3, 0, 100);  // comm records lost (dropped)
  model::MatchResult m = match_job(b.job);
  EXPECT_EQ(m.instances.size(), 3u);
  ASSERT_EQ(m.comms.size(), 1u);
  EXPECT_EQ(m.comms[0].nranks, 2);
}

TEST(Matcher, EmptyJob) {
  model::JobTrace job;
  model::MatchResult m = match_job(job);
  EXPECT_TRUE(m.instances.empty());
  EXPECT_TRUE(m.comms.empty());
}

}  // namespace
}  // namespace ncclwatch::match

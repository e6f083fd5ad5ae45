// The hang verdict on hand-built jobs with known answers: entry evidence (calls never returned),
// a group end, an init, a rank waiting in another comm, and traces without entry evidence.
#include <gtest/gtest.h>

#include "match/hang_finder.h"
#include "match/matcher.h"
#include "synthetic_job.h"

namespace ncclwatch::match {
namespace {

using format::Func;
using testing::JobBuilder;

constexpr uint64_t kComm = 0xabc;

// Marks the last call of `rank` as entered and never returned (as the trace reader does).
void never_returned(JobBuilder& b, int rank, int64_t seen_ns) {
  auto& r = b.job.ranks[rank];
  auto& c = r.calls.back();
  c.flags |= model::kCallNeverReturned;
  c.exit_ns = seen_ns;
  model::HookedCall h;
  h.enter_ns = c.enter_ns;
  h.exit_ns = seen_ns;
  h.comm_id = c.comm_id;
  h.seq = c.seq;
  h.count = c.count;
  h.func = c.func;
  h.datatype = c.datatype;
  h.group_id = c.group_id;
  h.returned = false;
  r.never_returned.push_back(h);
}

void returned(JobBuilder& b, int rank, const model::CallEvent& c, int64_t alive_until) {
  auto& r = b.job.ranks[rank];
  r.last_returned = {c.enter_ns, c.exit_ns, c.comm_id, c.seq,      c.count, 1,
                     -1,         0,         c.func,    c.datatype, true,    0};
  r.info.alive_until_ns = alive_until;
}

TEST(HangFinder, CleanJobHasNoVerdict) {
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) b.call(r, kComm, 0, Func::kAllReduce, 10, 100, 200);
  const auto v = find_hang(b.job, match_job(b.job));
  EXPECT_FALSE(v.hung);
}

TEST(HangFinder, RanksWaitingInACollectiveAndTheOneThatNeverCame) {
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    for (uint64_t s = 0; s < 3; ++s)
      b.call(r, kComm, s, Func::kAllReduce, 256, 1000 * (s + 1), 1000 * (s + 1) + 100);
    returned(b, r, b.job.ranks[r].calls.back(), 3100);
  }
  // Rank 1 stops after #2 (alive 40 s later, no NCCL call); the others enter #3 and wait.
  b.job.ranks[1].info.alive_until_ns = 3100 + 40'000'000'000;
  for (int r : {0, 2, 3}) {
    b.call(r, kComm, 3, Func::kAllReduce, 256, 5000 + r, 5000 + r);
    never_returned(b, r, 65'000'000'000);
  }
  const auto v = find_hang(b.job, match_job(b.job));
  ASSERT_TRUE(v.hung);
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.func, Func::kAllReduce);
  EXPECT_EQ(v.bytes, 1024u);
  EXPECT_EQ(v.waiting_ranks, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(v.missing_ranks, (std::vector<int32_t>{1}));
  EXPECT_TRUE(v.waiting_from_entry_evidence);
  EXPECT_EQ(v.since_ns, 5000);
  ASSERT_EQ(v.last_call_of_missing.size(), 1u);
  EXPECT_EQ(v.last_call_of_missing[0].seq, 2u);
  EXPECT_EQ(v.last_call_of_missing[0].idle_ns, 40'000'000'000);
  EXPECT_EQ(v.text.rfind("job hung in all_reduce #3 on comm 0x0000000000000abc (1.0 KiB): ranks "
                         "0,2-3 waiting",
                         0),
            0u)
      << v.text;
  EXPECT_NE(v.text.find("rank 1 never entered it — rank 1: last call all_reduce #2 on comm "
                        "0x0000000000000abc returned; no NCCL call for 40.0 s after it: host-side"),
            std::string::npos)
      << v.text;
}

TEST(HangFinder, RanksTimedOutAndRanksKilledInTheSameCallAllWaitThere) {
  // NCCL's timeout returned an error to ranks 0 and 2 (their calls returned); the launcher killed
  // rank 3 while still inside (only its in-flight record says so). All three waited in #3.
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    for (uint64_t s = 0; s < 3; ++s)
      b.call(r, kComm, s, Func::kAllReduce, 256, 1000 * (s + 1), 1000 * (s + 1) + 100);
  }
  for (int r : {0, 2}) b.call(r, kComm, 3, Func::kAllReduce, 256, 5000 + r, 2'000'005'000);
  b.call(3, kComm, 3, Func::kAllReduce, 256, 4990, 4990);
  never_returned(b, 3, 1'000'000'000);
  const auto v = find_hang(b.job, match_job(b.job));
  ASSERT_TRUE(v.hung);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.waiting_ranks, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(v.missing_ranks, (std::vector<int32_t>{1}));
  EXPECT_EQ(v.since_ns, 4990);
  EXPECT_EQ(v.waited_ns, 2'000'000'000);
}

TEST(HangFinder, MissingRankWaitingInAnotherCommIsSaidSo) {
  JobBuilder b(2);
  b.comm(kComm, {0, 1});
  b.comm(0xdef, {0, 1});
  b.call(0, kComm, 0, Func::kAllReduce, 8, 1000, 1000);
  never_returned(b, 0, 9000);
  b.call(1, 0xdef, 0, Func::kAllGather, 8, 1200, 1200);
  never_returned(b, 1, 9000);
  const auto v = find_hang(b.job, match_job(b.job));
  ASSERT_TRUE(v.hung);
  // Both wait, one rank each: the call entered first is where the job stopped.
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(v.missing_ranks, (std::vector<int32_t>{1}));
  ASSERT_EQ(v.last_call_of_missing.size(), 1u);
  EXPECT_TRUE(v.last_call_of_missing[0].waiting_elsewhere);
  EXPECT_EQ(v.last_call_of_missing[0].func, Func::kAllGather);
}

TEST(HangFinder, GroupEndWaitsForTheGroupsCollectives) {
  JobBuilder b(3);
  b.comm(kComm, {0, 1, 2});
  for (int r = 0; r < 2; ++r) {
    auto& c = b.call(r, kComm, 0, Func::kAllReduce, 8, 1000, 1001);
    c.group_id = 7;
    model::HookedCall g;
    g.enter_ns = 1002;
    g.exit_ns = 9000;
    g.func = Func::kGroupEnd;
    g.group_id = 7;
    g.returned = false;
    b.job.ranks[r].never_returned.push_back(g);
  }
  const auto v = find_hang(b.job, match_job(b.job));
  ASSERT_TRUE(v.hung);
  EXPECT_EQ(v.func, Func::kAllReduce);
  EXPECT_EQ(v.via, Func::kGroupEnd);
  EXPECT_EQ(v.waiting_ranks, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(v.missing_ranks, (std::vector<int32_t>{2}));
  EXPECT_NE(v.text.find("inside ncclGroupEnd"), std::string::npos) << v.text;
}

TEST(HangFinder, InitThatNeverReturnedNamesTheRankThatNeverCalledIt) {
  JobBuilder b(3);  // rank 2 has a trace without any NCCL call
  for (int r = 0; r < 2; ++r) {
    model::HookedCall h;
    h.enter_ns = 100;
    h.exit_ns = 5000;
    h.func = Func::kCommInitRank;
    h.comm_id = kComm;
    h.count = 3;
    h.peer = r;
    h.returned = false;
    b.job.ranks[r].never_returned.push_back(h);
  }
  const auto v = find_hang(b.job, match_job(b.job));
  ASSERT_TRUE(v.hung);
  EXPECT_EQ(v.func, Func::kCommInitRank);
  EXPECT_FALSE(v.has_seq);
  EXPECT_EQ(v.comm_size, 3);
  EXPECT_EQ(v.waiting_ranks, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(v.missing_ranks, (std::vector<int32_t>{2}));
  ASSERT_EQ(v.last_call_of_missing.size(), 1u);
  EXPECT_TRUE(v.last_call_of_missing[0].has_trace);
  EXPECT_NE(v.text.find("rank 2: no NCCL call recorded"), std::string::npos) << v.text;
}

TEST(HangFinder, WithoutEntryEvidenceTheLastIncompleteInstanceDecides) {
  JobBuilder b(3);
  b.comm(kComm, {0, 1, 2});
  for (int r = 0; r < 3; ++r) b.call(r, kComm, 0, Func::kAllReduce, 8, 1000, 1100);
  for (int r : {0, 2}) b.call(r, kComm, 1, Func::kAllReduce, 8, 2000 + r, 60'000'000'000);
  b.job.ranks[1].info.salvaged = true;
  const auto v = find_hang(b.job, match_job(b.job));
  ASSERT_TRUE(v.hung);
  EXPECT_FALSE(v.waiting_from_entry_evidence);
  EXPECT_EQ(v.seq, 1u);
  EXPECT_EQ(v.waiting_ranks, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(v.missing_ranks, (std::vector<int32_t>{1}));
  EXPECT_EQ(v.since_ns, 2000);
  EXPECT_EQ(v.dead_ranks, (std::vector<int32_t>{1}));
  EXPECT_NE(v.text.find("entered it"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("its process died or was killed"), std::string::npos) << v.text;
}

TEST(HangFinder, KernelLaunchedButNeverFinishedIsNamed) {
  // CUPTI mode: the stuck all-reduce's kernel was launched on ranks 0 and 2 (link records); rank
  // 2's kernel has its activity record, rank 0's never came: only rank 0 is "never finished".
  JobBuilder b(3);
  b.comm(kComm, {0, 1, 2});
  for (int r = 0; r < 3; ++r) {
    b.call(r, kComm, 0, Func::kAllReduce, 256, 1000, 1100);
    returned(b, r, b.job.ranks[r].calls.back(), 1100);
  }
  for (int r : {0, 2}) {
    b.call(r, kComm, 1, Func::kAllReduce, 256, 2000 + r, 2000 + r);
    never_returned(b, r, 9'000'000'000);
    format::KernelLinkRecord link{};
    link.t_ns = 2001 + r;
    link.comm_id = kComm;
    link.seq = 1;
    link.correlation = 70 + static_cast<uint32_t>(r);
    b.job.ranks[r].links.push_back(link);
  }
  model::KernelEvent done;
  done.start_ns = 2005;
  done.end_ns = 3000;
  done.correlation = 72;
  done.nccl = true;
  b.job.ranks[2].kernels.push_back(done);
  const auto v = find_hang(b.job, match_job(b.job));
  ASSERT_TRUE(v.hung);
  EXPECT_EQ(v.seq, 1u);
  EXPECT_EQ(v.missing_ranks, (std::vector<int32_t>{1}));
  EXPECT_EQ(v.kernel_never_finished, (std::vector<int32_t>{0}));
  EXPECT_NE(v.text.find("NCCL kernel launched, never finished on rank 0"), std::string::npos)
      << v.text;
}

}  // namespace
}  // namespace ncclwatch::match

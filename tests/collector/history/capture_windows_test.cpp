// collector/history/capture_windows: windows joined across ranks by id, and a job restricted to
// one window (each rank's own span; collectives only some ranks captured at the edges left out).
#include "history/capture_windows.h"

#include <gtest/gtest.h>

namespace ncclwatch::history {
namespace {

model::RankTrace rank_with_calls(int32_t rank, uint64_t comm, int n, int64_t wall_offset) {
  model::RankTrace t;
  t.info.rank = rank;
  t.info.wall_offset_ns = wall_offset;
  model::CommInfo info;
  info.id = comm;
  info.nranks = 2;
  info.rank = rank;
  t.comms.push_back(info);
  for (int i = 0; i < n; ++i) {
    model::CallEvent c;
    c.enter_ns = 1000 * (i + 1) + rank * 10;  // rank 1 a little later
    c.exit_ns = c.enter_ns + 100;
    c.comm_id = comm;
    c.seq = static_cast<uint64_t>(i);
    c.func = format::Func::kAllReduce;
    t.calls.push_back(c);
    model::KernelEvent k;
    k.start_ns = c.enter_ns + 10;
    k.end_ns = c.enter_ns + 90;
    t.kernels.push_back(k);
  }
  return t;
}

model::WindowMark mark(uint64_t id, format::WindowTrigger trigger, int64_t start, int64_t end,
                       uint64_t first_step, uint64_t end_step, bool closed = true) {
  model::WindowMark m;
  m.id = id;
  m.trigger = trigger;
  m.start_ns = start;
  m.end_ns = closed ? end : 0;
  m.closed = closed;
  m.first_step = first_step;
  m.end_step = end_step;
  return m;
}

TEST(CaptureWindows, JoinedByIdOldestFirst) {
  model::JobTrace job;
  job.ranks.push_back(rank_with_calls(0, 0x42, 10, 1'000'000'000));
  job.ranks.push_back(rank_with_calls(1, 0x42, 10, 1'000'000'000));
  job.ranks[0].windows = {mark(7, format::WindowTrigger::kOnDemand, 5000, 8000, 5, 8),
                          mark(3, format::WindowTrigger::kStepTime, 1500, 4500, 1, 4)};
  job.ranks[0].windows[1].text = "step time +18% since 03:12:05";
  job.ranks[1].windows = {mark(3, format::WindowTrigger::kStepTime, 2500, 4500, 2, 4),
                          mark(7, format::WindowTrigger::kOnDemand, 5000, 0, 5, 8, false)};
  const auto ws = join_windows(job);
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].id, 3u);
  EXPECT_EQ(ws[0].text, "step time +18% since 03:12:05");
  EXPECT_EQ(ws[0].first_step, 2u);  // the steps every rank captured
  EXPECT_EQ(ws[0].end_step, 4u);
  EXPECT_EQ(ws[0].closed(), 2u);
  EXPECT_EQ(ws[1].closed(), 1u);
  EXPECT_FALSE(one_whole_run(ws));
  EXPECT_NE(describe_window(ws[0], 0, 2).find("window 1 of 2, step-time: steps 2-3"),
            std::string::npos)
      << describe_window(ws[0], 0, 2);
  const auto j = window_json(ws[1], 1);
  EXPECT_EQ(j["index"], 2);
  EXPECT_EQ(j["trigger"], "on-demand");
  EXPECT_EQ(j["ranks_closed"], 1);

  job.ranks[1].windows.push_back(mark(0, format::WindowTrigger::kWholeRun, 0, 20000, 0, 10));
  EXPECT_TRUE(one_whole_run(join_windows(job)));
  EXPECT_TRUE(one_whole_run({}));
}

TEST(CaptureWindows, AWindowJobHoldsWhatEveryRankCaptured) {
  model::JobTrace job;
  job.ranks.push_back(rank_with_calls(0, 0x42, 10, 0));
  job.ranks.push_back(rank_with_calls(1, 0x42, 10, 0));
  job.ranks.push_back(rank_with_calls(2, 0x99, 10, 0));  // took no part
  // Rank 0 captured seqs 2-6, rank 1 seqs 3-7 (it opened and closed later).
  job.ranks[0].windows = {mark(9, format::WindowTrigger::kOnDemand, 3000, 7500, 2, 7)};
  job.ranks[1].windows = {mark(9, format::WindowTrigger::kOnDemand, 4000, 8500, 3, 8)};
  const auto ws = join_windows(job);
  ASSERT_EQ(ws.size(), 1u);
  const model::JobTrace w = window_job(job, ws[0]);
  ASSERT_EQ(w.ranks.size(), 2u);
  for (const auto& r : w.ranks) {
    ASSERT_EQ(r.calls.size(), 4u) << r.info.rank;  // seqs 3-6: what both captured
    EXPECT_EQ(r.calls.front().seq, 3u);
    EXPECT_EQ(r.calls.back().seq, 6u);
    EXPECT_EQ(r.windows.size(), 1u);
  }
  EXPECT_EQ(w.ranks[0].kernels.size(), 5u);  // its own span: [3000, 7500)
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].message.find("2 of 3 ranks"), std::string::npos);

  // A window rank 1 never closed (it hung): its end is not trimmed.
  job.ranks[1].windows = {
      mark(9, format::WindowTrigger::kHang, 4000, 0, 3, format::kNoStep, false)};
  const model::JobTrace hung = window_job(job, join_windows(job)[0]);
  EXPECT_EQ(hung.ranks[1].calls.back().seq, 9u);
  EXPECT_EQ(hung.ranks[0].calls.back().seq, 6u);
}

// A hang after the newest window closed: the calls never returned from (always-tier evidence)
// stay in that window's job, untrimmed, so the hang verdict still sees them.
TEST(CaptureWindows, TheNewestWindowKeepsTheHangEvidence) {
  model::JobTrace job;
  job.ranks.push_back(rank_with_calls(0, 0x42, 10, 0));
  job.ranks.push_back(rank_with_calls(1, 0x42, 10, 0));
  job.ranks[0].calls.back().flags |= model::kCallNeverReturned;  // seq 9, long after the window
  job.ranks[1].calls.pop_back();                                 // rank 1 never came
  for (auto& r : job.ranks)
    r.windows = {mark(4, format::WindowTrigger::kSchedule, 1500, 4500, 0, 3)};
  const auto ws = join_windows(job);
  const model::JobTrace kept = window_job(job, ws[0], true);
  EXPECT_EQ(kept.ranks[0].calls.back().seq, 9u);
  EXPECT_EQ(kept.ranks[1].calls.back().seq, 3u);
  const model::JobTrace plain = window_job(job, ws[0]);
  EXPECT_EQ(plain.ranks[0].calls.back().seq, 3u);
}

}  // namespace
}  // namespace ncclwatch::history

// The drain thread's capture windows (record/capture_plan.h): which detail records reach the
// trace file, and the window marks, for the whole run and every form of the schedule.
#include "record/capture_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace ncclwatch::shim {
namespace {

using format::Record;
using format::RecordKind;
using format::WindowEvent;
using format::WindowTrigger;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

Record call_at(int64_t t) {
  Record r{};
  r.call.prefix.kind = RecordKind::kCall;
  r.call.t_enter_ns = t;
  return r;
}
Record kernel_at(int64_t t) {
  Record r{};
  r.kernel.prefix.kind = RecordKind::kKernel;
  r.kernel.start_ns = t;
  r.kernel.end_ns = t + kMs;
  return r;
}
Record always_tier(RecordKind kind) {
  Record r{};
  r.prefix.kind = kind;
  return r;
}

struct Marks {
  std::vector<format::WindowRecord> all;
  CapturePlan::Emit emit() {
    return [this](const Record& r) {
      ASSERT_EQ(r.prefix.kind, RecordKind::kWindow);
      all.push_back(r.window);
    };
  }
};

Settings with_schedule(const std::string& schedule) {
  Settings s;
  s.detail = DetailLevel::kWindows;
  EXPECT_TRUE(parse_capture_schedule(schedule, s.capture)) << schedule;
  return s;
}

TEST(CapturePlan, DetailAllKeepsEverythingInOneWholeRunWindow) {
  Settings s;
  s.detail = DetailLevel::kAll;
  Marks marks;
  CapturePlan plan;
  plan.start(s, marks.emit(), 100, 0);
  for (int i = 0; i < 10; ++i) plan.step_started(i, 1000 + i * 100);
  EXPECT_TRUE(plan.keep(call_at(50)));
  EXPECT_TRUE(plan.keep(kernel_at(1'000'000)));
  EXPECT_TRUE(plan.in_window(0, 1));
  plan.finish(5000);
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[0].id, 0u);
  EXPECT_EQ(marks.all[0].prefix.u8a, static_cast<uint8_t>(WindowTrigger::kWholeRun));
  EXPECT_EQ(marks.all[0].prefix.u8b, static_cast<uint8_t>(WindowEvent::kOpen));
  EXPECT_EQ(marks.all[0].start_ns, 100);
  EXPECT_EQ(marks.all[0].first_step, 0u);
  EXPECT_EQ(marks.all[1].prefix.u8b, static_cast<uint8_t>(WindowEvent::kClose));
  EXPECT_EQ(marks.all[1].end_ns, 5000);
  EXPECT_EQ(marks.all[1].end_step, 10u);
}

// first:3 -- from the start to the start of the fourth step seen; the always tier throughout.
TEST(CapturePlan, FirstStepsThenSummariesOnly) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("first:3"), marks.emit(), 100, 0);
  ASSERT_EQ(marks.all.size(), 1u);
  EXPECT_EQ(marks.all[0].start_ns, 100);
  EXPECT_EQ(marks.all[0].first_step, format::kNoStep);  // not known yet
  EXPECT_TRUE(plan.keep(call_at(150)));
  for (uint64_t step = 0; step < 3; ++step) plan.step_started(step, 200 + 100 * step);
  EXPECT_TRUE(plan.open());
  EXPECT_TRUE(plan.keep(call_at(450)));
  plan.step_started(3, 500);
  EXPECT_FALSE(plan.open());
  ASSERT_EQ(marks.all.size(), 2u);
  const format::WindowRecord& close = marks.all[1];
  EXPECT_EQ(close.prefix.u8a, static_cast<uint8_t>(WindowTrigger::kSchedule));
  EXPECT_EQ(close.prefix.u8b, static_cast<uint8_t>(WindowEvent::kClose));
  EXPECT_EQ(close.id, marks.all[0].id);
  EXPECT_NE(close.id, 0u);
  EXPECT_EQ(close.first_step, 0u);
  EXPECT_EQ(close.end_step, 3u);
  EXPECT_EQ(close.start_ns, 100);
  EXPECT_EQ(close.end_ns, 500);
  EXPECT_EQ(close.detail_records, 2u);
  // A kernel of step 2 that CUPTI delivers after the window closed still belongs to it.
  EXPECT_TRUE(plan.keep(kernel_at(499)));
  EXPECT_FALSE(plan.keep(kernel_at(500)));
  EXPECT_FALSE(plan.keep(call_at(600)));
  for (RecordKind k : {RecordKind::kComm, RecordKind::kStep, RecordKind::kWindow,
                       RecordKind::kInFlight, RecordKind::kString, RecordKind::kClock})
    EXPECT_TRUE(plan.keep(always_tier(k))) << static_cast<int>(k);
  EXPECT_TRUE(plan.in_window(450, 550));
  EXPECT_FALSE(plan.in_window(500, 600));
  plan.finish(1000);
  EXPECT_EQ(marks.all.size(), 2u);  // nothing open, nothing more
}

// steps:5-6 -- exactly those steps; the marks name them; the same id on every rank.
TEST(CapturePlan, StepRangeOpensAndClosesOnItsSteps) {
  Marks marks, other;
  CapturePlan plan, other_rank;
  plan.start(with_schedule("steps:5-6"), marks.emit(), 0, 0);
  other_rank.start(with_schedule("steps:5-6"), other.emit(), 7, 0);
  EXPECT_TRUE(marks.all.empty());
  for (uint64_t step = 0; step < 5; ++step) plan.step_started(step, 1000 * step);
  EXPECT_FALSE(plan.keep(call_at(4500)));
  EXPECT_FALSE(plan.keep(kernel_at(60 * kS)));  // a GPU record ahead of the host moves nothing
  plan.step_started(5, 5000);
  EXPECT_TRUE(plan.keep(call_at(5000)));
  plan.step_started(6, 6000);
  EXPECT_TRUE(plan.keep(kernel_at(6999)));
  plan.step_started(7, 7000);
  EXPECT_FALSE(plan.keep(call_at(7000)));
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[0].first_step, 5u);
  EXPECT_EQ(marks.all[0].end_step, 7u);  // open: the requested end
  EXPECT_EQ(marks.all[0].start_ns, 5000);
  EXPECT_EQ(marks.all[1].end_step, 7u);
  EXPECT_EQ(marks.all[1].end_ns, 7000);
  EXPECT_EQ(marks.all[1].detail_records, 2u);
  other_rank.step_started(5, 5003);
  ASSERT_EQ(other.all.size(), 1u);
  EXPECT_EQ(other.all[0].id, marks.all[0].id);
}

// A rank that learns its steps late (the step structure is learned from ~100 calls) starts at
// the step it is in; a range it learns of only after its end never opens.
TEST(CapturePlan, StepRangeLearnedLateStartsAtTheCurrentStep) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("steps:5-8,steps:10-11"), marks.emit(), 0, 0);
  plan.step_started(7, 7000);
  ASSERT_EQ(marks.all.size(), 1u);
  EXPECT_EQ(marks.all[0].first_step, 7u);
  EXPECT_EQ(marks.all[0].end_step, 9u);
  EXPECT_FALSE(plan.keep(call_at(6999)));
  plan.step_started(12, 12'000);  // 9, 10 and 11 were never seen here
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[1].prefix.u8b, static_cast<uint8_t>(WindowEvent::kClose));
  EXPECT_EQ(marks.all[1].end_step, 12u);
  EXPECT_FALSE(plan.keep(call_at(12'500)));
  EXPECT_EQ(marks.all.size(), 2u);  // steps:10-11 never opened: no marks
  plan.poll(12'000 + CapturePlan::kKeepClosedNs + 1);
  EXPECT_EQ(plan.windows(), 0u);
}

// every:DURATION:N -- N steps from the first step starting at or after each multiple of DURATION
// of wall-clock time (the same moment on every host); the next one planned as each opens.
TEST(CapturePlan, EveryDurationOnWallClockMultiples) {
  Marks marks;
  CapturePlan plan;
  // Host clock t is wall-clock time t + 95 s: the first multiple of 10 s is at host time 5 s.
  plan.start(with_schedule("every:10s:2"), marks.emit(), 0, 95 * kS);
  plan.poll(1 * kS);
  plan.step_started(0, 3 * kS);
  plan.step_started(1, 4 * kS + 999 * kMs);
  EXPECT_TRUE(marks.all.empty());
  EXPECT_FALSE(plan.keep(call_at(5 * kS)));
  plan.step_started(2, 5 * kS + 1);
  ASSERT_EQ(marks.all.size(), 1u);
  EXPECT_EQ(marks.all[0].first_step, 2u);
  EXPECT_EQ(marks.all[0].end_step, 4u);
  EXPECT_TRUE(plan.keep(call_at(6 * kS)));
  plan.step_started(3, 7 * kS);
  plan.step_started(4, 9 * kS);
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[1].end_step, 4u);
  EXPECT_FALSE(plan.keep(call_at(10 * kS)));
  // The next: wall clock 110 s = host 15 s.
  plan.step_started(5, 14 * kS);
  EXPECT_EQ(marks.all.size(), 2u);
  plan.step_started(6, 16 * kS);
  ASSERT_EQ(marks.all.size(), 3u);
  EXPECT_EQ(marks.all[2].first_step, 6u);
  EXPECT_NE(marks.all[2].id, marks.all[0].id);
  plan.finish(17 * kS);
  ASSERT_EQ(marks.all.size(), 4u);
  EXPECT_EQ(marks.all[3].end_step, 7u);
}

// A stalled job (no step for a whole period after a window came due) skips to the next multiple
// rather than opening one late; closed windows are forgotten 30 s after they end.
TEST(CapturePlan, EveryDurationSkipsAStalledPeriodAndForgetsOldWindows) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("every:10s:1"), marks.emit(), 0, 0);  // due at 10 s, 20 s, ...
  plan.poll(21 * kS);  // nothing started since 10 s: the next is at 30 s
  plan.step_started(0, 25 * kS);
  EXPECT_TRUE(marks.all.empty());
  plan.step_started(1, 31 * kS);
  plan.step_started(2, 32 * kS);
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[0].first_step, 1u);
  EXPECT_EQ(marks.all[1].end_step, 2u);
  EXPECT_TRUE(plan.keep(kernel_at(31 * kS + kMs)));
  plan.poll(63 * kS);
  EXPECT_FALSE(plan.keep(kernel_at(31 * kS + kMs)));  // forgotten: too late to belong
  EXPECT_LE(plan.windows(), 2u);                      // the pending next one (40 s or later)
}

// Steps learned late (the step structure needs ~100 collectives; NVTX ranges come seconds late):
// what was judged stays judged, so a window closing in the past ends after the newest record it
// kept, its end step the first step starting after that; one opening in the past starts there.
TEST(CapturePlan, StepsLearnedLateMoveTheWindowToWhatWasKept) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("first:2,steps:8-9"), marks.emit(), 0, 0);
  EXPECT_TRUE(plan.keep(call_at(5 * kS)));
  plan.step_started(0, 1 * kS);
  plan.step_started(1, 2 * kS);
  plan.step_started(2, 3 * kS);  // first:2 ends here, but records up to 5 s were kept
  EXPECT_EQ(marks.all.size(), 1u);
  EXPECT_TRUE(plan.keep(kernel_at(4 * kS)));
  EXPECT_FALSE(plan.keep(kernel_at(5 * kS + 1)));
  plan.step_started(3, 4 * kS);
  EXPECT_EQ(marks.all.size(), 1u);
  plan.step_started(4, 6 * kS);
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[1].end_ns, 5 * kS + 1);
  EXPECT_EQ(marks.all[1].end_step, 4u);
  EXPECT_EQ(marks.all[1].first_step, 0u);

  EXPECT_FALSE(plan.keep(call_at(20 * kS)));
  plan.step_started(8, 8 * kS);  // steps:8-9 learned at 20 s: from there on
  ASSERT_EQ(marks.all.size(), 3u);
  EXPECT_EQ(marks.all[2].start_ns, 20 * kS + 1);
  EXPECT_EQ(marks.all[2].first_step, 8u);
  EXPECT_FALSE(plan.keep(call_at(19 * kS)));
  EXPECT_TRUE(plan.keep(call_at(21 * kS)));
  plan.finish(22 * kS);
  ASSERT_EQ(marks.all.size(), 4u);
  EXPECT_EQ(marks.all[3].end_ns, 22 * kS);
}

TEST(CapturePlan, OffKeepsOnlyTheAlwaysTier) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("off"), marks.emit(), 0, 0);
  for (uint64_t step = 0; step < 100; ++step) plan.step_started(step, 10 * step);
  EXPECT_FALSE(plan.keep(call_at(5)));
  EXPECT_TRUE(plan.keep(always_tier(RecordKind::kStep)));
  plan.finish(2000);
  EXPECT_TRUE(marks.all.empty());
}

}  // namespace
}  // namespace ncclwatch::shim

namespace ncclwatch::shim {
namespace {

format::CaptureAsk ask_steps(uint64_t id, uint64_t first, uint64_t count) {
  format::CaptureAsk a;
  a.id = id;
  a.unit = format::kCaptureSteps;
  a.first = first;
  a.count = count;
  a.trigger = WindowTrigger::kOnDemand;
  a.requested_realtime_ns = 77;
  return a;
}

// `ncclwatch capture`: the steps it names, once per id (the segment and the control file carry
// the same request), on every rank alike; a rank that notices late starts at its current step.
TEST(CapturePlan, RequestedStepsOpenOnTheirStepsOncePerId) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("off"), marks.emit(), 0, 0);
  for (uint64_t step = 0; step < 10; ++step) plan.step_started(step, 100 * step);
  EXPECT_TRUE(plan.request(ask_steps(42, 12, 3), 1000));
  EXPECT_FALSE(plan.request(ask_steps(42, 12, 3), 1001));  // the same request, seen twice
  plan.step_started(10, 1000);
  plan.step_started(11, 1100);
  EXPECT_FALSE(plan.keep(call_at(1150)));
  plan.step_started(12, 1200);
  EXPECT_TRUE(plan.keep(call_at(1250)));
  for (uint64_t step = 13; step < 16; ++step) plan.step_started(step, 100 * step);
  EXPECT_FALSE(plan.keep(call_at(1550)));
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[0].id, 42u);
  EXPECT_EQ(marks.all[0].prefix.u8a, static_cast<uint8_t>(WindowTrigger::kOnDemand));
  EXPECT_EQ(marks.all[0].first_step, 12u);
  EXPECT_EQ(marks.all[0].requested_realtime_ns, 77);
  EXPECT_EQ(marks.all[1].end_step, 15u);
  EXPECT_EQ(marks.all[1].end_ns, 1500);

  // Noticed during step 21 of 20-24: from step 21 on; one for steps already over: nothing.
  for (uint64_t step = 16; step < 22; ++step) plan.step_started(step, 100 * step);
  EXPECT_TRUE(plan.request(ask_steps(43, 20, 5), 2150));
  ASSERT_EQ(marks.all.size(), 3u);
  EXPECT_EQ(marks.all[2].first_step, 21u);
  EXPECT_EQ(marks.all[2].start_ns, 2100);
  EXPECT_TRUE(plan.request(ask_steps(44, 2, 5), 2160));
  EXPECT_EQ(marks.all.size(), 3u);
  // With detail for the whole run, requests change nothing.
  Settings all;
  all.detail = DetailLevel::kAll;
  CapturePlan whole;
  whole.start(all, nullptr, 0, 0);
  EXPECT_FALSE(whole.request(ask_steps(45, 2, 5), 10));
}

// A rank that counted seconds of the clock while it learned switches to learned steps, whose
// numbers restart below the seconds: a window counted in steps that is open there closes there,
// its end the second that would have followed. Learned step numbers asked for while it counted
// seconds wait for the learned steps (on Unix seconds every such range would look long over), as
// do those asked for after the switch: both open on their steps.
TEST(CapturePlan, StepNumberingRestartingClosesTheStepWindowsOpenThere) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("off"), marks.emit(), 0, 0);
  const uint64_t second = 1'700'000'000;
  const bool on_clock = true;
  plan.step_started(second, 0, false, on_clock);
  EXPECT_TRUE(plan.request(ask_steps(50, second + 1, 10), 10));  // the asker saw seconds
  plan.step_started(second + 1, kS, false, on_clock);
  plan.step_started(second + 2, 2 * kS, false, on_clock);
  EXPECT_TRUE(plan.request(ask_steps(51, 400, 5), 2 * kS + 10));  // learned numbers: they wait
  EXPECT_TRUE(plan.keep(call_at(2 * kS + 20)));
  plan.numbering_restarted(2 * kS + 500 * kMs);
  plan.step_started(300, 2 * kS + 500 * kMs);
  EXPECT_FALSE(plan.keep(call_at(2 * kS + 600 * kMs)));
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[0].id, 50u);
  EXPECT_EQ(marks.all[0].first_step, second + 1);
  EXPECT_EQ(marks.all[1].prefix.u8b, static_cast<uint8_t>(WindowEvent::kClose));
  EXPECT_EQ(marks.all[1].end_step, second + 3);
  EXPECT_EQ(marks.all[1].end_ns, 2 * kS + 500 * kMs);
  EXPECT_TRUE(plan.request(ask_steps(52, 400, 5), 2 * kS + 700 * kMs));
  for (uint64_t step = 301; step <= 400; ++step) plan.step_started(step, 3 * kS + step * kMs);
  ASSERT_EQ(marks.all.size(), 4u);
  EXPECT_EQ(marks.all[2].id, 51u);
  EXPECT_EQ(marks.all[2].first_step, 400u);
  EXPECT_EQ(marks.all[3].id, 52u);
  EXPECT_EQ(marks.all[3].first_step, 400u);
}

// A schedule's steps:A-B on a rank that counts seconds of the clock while it learns: the seconds
// neither open nor end it (the failure tiers_test's launch-bound job showed: "already over" on
// every rank still on the clock at step A); the learned steps open it on A.
TEST(CapturePlan, AStepScheduleWaitsForLearnedStepsOnARankCountingSeconds) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("steps:700-719"), marks.emit(), 0, 0);
  const uint64_t second = 1'700'000'000;
  for (uint64_t k = 0; k < 5; ++k)
    plan.step_started(second + k, static_cast<int64_t>(k) * kS, false, true);
  EXPECT_TRUE(marks.all.empty());
  EXPECT_FALSE(plan.detail_soon(5 * kS, 0, 10));
  plan.numbering_restarted(5 * kS);
  for (uint64_t step = 690; step < 700; ++step)
    plan.step_started(step, 5 * kS + static_cast<int64_t>(step) * kMs);
  EXPECT_TRUE(plan.detail_soon(6 * kS, 0, 10));
  plan.step_started(700, 6 * kS);
  ASSERT_EQ(marks.all.size(), 1u);
  EXPECT_EQ(marks.all[0].first_step, 700u);
  EXPECT_TRUE(plan.keep(call_at(6 * kS + 1)));
}

// A request in seconds (no step numbers known): CLOCK_REALTIME start and length, on every host
// the same moments; closed by time.
TEST(CapturePlan, RequestedSecondsAreAWallClockSpan) {
  Marks marks;
  CapturePlan plan;
  plan.start(with_schedule("off"), marks.emit(), 0, 1000 * kS);  // realtime = host + 1000 s
  format::CaptureAsk a = ask_steps(9, 1005 * kS, 2 * kS);
  a.unit = format::kCaptureSeconds;
  EXPECT_TRUE(plan.request(a, 1 * kS));
  EXPECT_FALSE(plan.keep(call_at(4 * kS)));
  EXPECT_TRUE(plan.keep(call_at(5 * kS)));
  EXPECT_TRUE(plan.keep(kernel_at(7 * kS - 1)));
  EXPECT_FALSE(plan.keep(call_at(7 * kS)));
  plan.poll(6 * kS);
  EXPECT_EQ(marks.all.size(), 1u);
  plan.poll(7 * kS);
  ASSERT_EQ(marks.all.size(), 2u);
  EXPECT_EQ(marks.all[1].start_ns, 5 * kS);
  EXPECT_EQ(marks.all[1].end_ns, 7 * kS);
  // first = 0: from now.
  a.id = 10;
  a.first = 0;
  EXPECT_TRUE(plan.request(a, 8 * kS));
  EXPECT_TRUE(plan.keep(call_at(8 * kS)));
  plan.finish(9 * kS);
  ASSERT_EQ(marks.all.size(), 4u);
  EXPECT_EQ(marks.all[3].end_ns, 9 * kS);  // the run ended inside it
}

// Capture by itself: the trigger's words go into StringRecords named by both marks' prefix.tid
// (ids of the drain thread's own, above the GPU string table's); a hang's window (kCaptureRecent)
// starts at the oldest detail the drain thread still holds, keeps those records when they are
// judged again, and closes by time.
TEST(CapturePlan, AWindowByItselfCarriesItsWordsAndAHangOneTheRecentDetail) {
  std::vector<Record> out;
  CapturePlan plan;
  plan.start(
      with_schedule("off"), [&](const Record& r) { out.push_back(r); }, 0, 0);
  for (uint64_t step = 0; step < 10; ++step) plan.step_started(step, 100 * step);
  EXPECT_FALSE(plan.keep(call_at(950)));  // no window: left out (the drain thread holds it)
  const std::string words(70, 'w');       // two chunks
  format::CaptureAsk hang = ask_steps(7, 0, 5 * kS);
  hang.unit = format::kCaptureRecent;
  hang.trigger = WindowTrigger::kHang;
  hang.text = words;
  EXPECT_TRUE(plan.request(hang, 1000, /*recent_start_ns=*/900));
  EXPECT_FALSE(plan.request(hang, 1001, 900)) << "once per id";
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].prefix.kind, RecordKind::kString);
  EXPECT_EQ(out[0].string.prefix.tid, CapturePlan::kFirstTextId);
  EXPECT_EQ(std::string(out[0].string.text, format::kStringChunkBytes),
            words.substr(0, format::kStringChunkBytes));
  EXPECT_EQ(out[1].string.prefix.u8a, 1);
  EXPECT_EQ(out[1].string.prefix.flags, format::kStringLastChunk);
  EXPECT_EQ(std::string(out[1].string.text, 70 - format::kStringChunkBytes),
            words.substr(format::kStringChunkBytes));
  ASSERT_EQ(out[2].prefix.kind, RecordKind::kWindow);
  EXPECT_EQ(out[2].window.prefix.tid, CapturePlan::kFirstTextId);
  EXPECT_EQ(out[2].window.start_ns, 900);
  EXPECT_EQ(out[2].window.first_step, format::kNoStep);
  EXPECT_TRUE(plan.keep(call_at(950))) << "the held record, judged again";
  EXPECT_FALSE(plan.keep(call_at(899)));
  EXPECT_TRUE(plan.keep(kernel_at(2 * kS)));
  plan.poll(5 * kS + 1000);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].window.prefix.u8b, static_cast<uint8_t>(WindowEvent::kClose));
  EXPECT_EQ(out[3].window.prefix.tid, CapturePlan::kFirstTextId);
  EXPECT_EQ(out[3].window.end_ns, 5 * kS + 1000);
  EXPECT_EQ(out[3].window.detail_records, 2u);

  // A step-time window with its words: the next string id.
  format::CaptureAsk slow = ask_steps(8, 20, 3);
  slow.trigger = WindowTrigger::kStepTime;
  slow.text = "step time +30%";
  EXPECT_TRUE(plan.request(slow, 6 * kS));
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[4].string.prefix.tid, CapturePlan::kFirstTextId + 1);
  for (uint64_t step = 10; step < 21; ++step) plan.step_started(step, 6 * kS + 100 * step);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[5].window.prefix.tid, CapturePlan::kFirstTextId + 1);
  EXPECT_EQ(out[5].window.first_step, 20u);
}

}  // namespace
}  // namespace ncclwatch::shim

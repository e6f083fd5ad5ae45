// Entry evidence (format version 2): InFlightRecords in a trace, superseded by the record written
// on return; in-flight slots of a dead process's segment turned into records by salvage; older
// trace versions still read, with a warning.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "ncclwatch/in_flight_slot.h"
#include "trace/rank_loader.h"
#include "trace/salvage.h"
#include "trace/trace_header_check.h"
#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

using namespace testing;  // NOLINT: the fixture's builders

format::CallEntry entry(Func func, uint64_t comm, uint32_t seq, int64_t enter_ns) {
  format::CallEntry e{};
  e.t_enter_ns = enter_ns;
  e.comm_id = comm;
  e.count = 1024;
  e.seq = seq;
  e.peer = -1;
  e.func = static_cast<uint8_t>(func);
  e.datatype = 7;  // float32
  return e;
}

Record in_flight(const format::CallEntry& e, int64_t seen_ns, uint32_t tid = 42,
                 format::InFlightSource source = format::InFlightSource::kDrain) {
  format::InFlightSlot slot{};
  slot.owner_tid = tid;
  slot.active = 1;
  slot.entry = e;
  return format::in_flight_record(slot, seen_ns, source);
}

int64_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(EntryEvidence, ReturnedCallsSupersedeTheirInFlightRecordsAndTheRestNeverReturned) {
  TempDir dir;
  std::vector<Record> records;
  records.push_back(make_comm(0x77, 4, 1, 100));
  // #0 was seen in flight (a slow call), then returned: not in flight.
  records.push_back(in_flight(entry(Func::kAllReduce, 0x77, 0, 1000), 2000));
  records.push_back(make_call(Func::kAllReduce, 0x77, 0, 1000, 2500));
  // #1 returned before the drain thread's record of it was pushed (record after the return).
  records.push_back(make_call(Func::kAllReduce, 0x77, 1, 3000, 4000));
  records.push_back(in_flight(entry(Func::kAllReduce, 0x77, 1, 3000), 3900));
  // #2 never returned: seen by the drain thread, then by salvage (one call, latest sighting).
  records.push_back(in_flight(entry(Func::kAllReduce, 0x77, 2, 5000), 6000));
  records.push_back(in_flight(entry(Func::kAllReduce, 0x77, 2, 5000), 9000, 42,
                              format::InFlightSource::kSalvage));
  // A group end on another thread that never returned either.
  records.push_back(in_flight(entry(Func::kGroupEnd, 0, 0, 5500), 9000, 43));
  const std::string path = write_rank(dir.path(), "j", "h", 10, 1, 4, records);

  std::vector<model::InputProblem> problems;
  const auto t = load_rank(path, problems);
  EXPECT_TRUE(problems.empty()) << problems[0].message;
  ASSERT_EQ(t.never_returned.size(), 2u);
  EXPECT_EQ(t.never_returned[0].func, Func::kAllReduce);
  EXPECT_EQ(t.never_returned[0].seq, 2u);
  EXPECT_EQ(t.never_returned[0].enter_ns, 5000);
  EXPECT_EQ(t.never_returned[0].exit_ns, 9000);
  EXPECT_FALSE(t.never_returned[0].returned);
  EXPECT_EQ(t.never_returned[1].func, Func::kGroupEnd);
  // The collective that never returned is a call too (the matcher must see it was entered).
  ASSERT_EQ(t.calls.size(), 3u);
  EXPECT_EQ(t.calls[2].seq, 2u);
  EXPECT_EQ(t.calls[2].flags & model::kCallNeverReturned, model::kCallNeverReturned);
  EXPECT_EQ(t.calls[0].flags & model::kCallNeverReturned, 0);
  EXPECT_EQ(t.last_returned.func, Func::kAllReduce);
  EXPECT_EQ(t.last_returned.seq, 1u);
  EXPECT_EQ(t.info.alive_until_ns, 9000);
}

// A call seen in flight whose return record is not in the trace (outside a capture window before
// the shim kept such returns, or dropped by a full ring) returned if its thread entered a hooked
// call after it: one thread is in one hooked call at a time. Only the last call of a thread can
// be one that never returned.
TEST(EntryEvidence, AThreadsLaterEntryProvesItsEarlierCallReturned) {
  TempDir dir;
  std::vector<Record> records;
  records.push_back(make_comm(0x77, 4, 1, 100));
  // Thread 4242 (the fixture's): #0 in flight for a second, no return record; #7 returned later.
  Record slow = in_flight(entry(Func::kAllReduce, 0x77, 0, 1000), 2'000'000'000, 4242);
  records.push_back(slow);
  records.push_back(make_call(Func::kAllReduce, 0x77, 7, 3'000'000'000, 3'000'001'000));
  // Thread 43: two calls seen in flight, no return of either: the first returned (the second
  // was entered after it), the second never did.
  records.push_back(in_flight(entry(Func::kBroadcast, 0x77, 1, 1500), 1'500'000'000, 43));
  records.push_back(in_flight(entry(Func::kBroadcast, 0x77, 2, 4'000'000'000), 6'000'000'000, 43));
  // Thread 44: one call in flight and nothing after: never returned, whatever other threads did.
  records.push_back(in_flight(entry(Func::kGroupEnd, 0, 0, 2000), 5'000'000'000, 44));
  const std::string path = write_rank(dir.path(), "j", "h", 10, 1, 4, records);

  std::vector<model::InputProblem> problems;
  const auto t = load_rank(path, problems);
  EXPECT_TRUE(problems.empty()) << problems[0].message;
  ASSERT_EQ(t.never_returned.size(), 2u);
  EXPECT_EQ(t.never_returned[0].func, Func::kGroupEnd);
  EXPECT_EQ(t.never_returned[0].tid, 44u);
  EXPECT_EQ(t.never_returned[1].func, Func::kBroadcast);
  EXPECT_EQ(t.never_returned[1].enter_ns, 4'000'000'000);
  std::size_t flagged = 0;
  for (const auto& c : t.calls) flagged += (c.flags & model::kCallNeverReturned) != 0;
  EXPECT_EQ(flagged, 1u);  // the broadcast (a group end is not a call)
}

TEST(EntryEvidence, BadInFlightRecordsAreSkipped) {
  TempDir dir;
  Record no_thread = in_flight(entry(Func::kAllReduce, 0x77, 0, 1000), 2000, 0);
  Record seen_before_entry = in_flight(entry(Func::kAllReduce, 0x77, 0, 1000), 500);
  Record bad_func = in_flight(entry(Func::kAllReduce, 0x77, 0, 1000), 2000);
  bad_func.in_flight.entry.func = 200;
  const std::string path =
      write_rank(dir.path(), "j", "h", 10, 1, 4, {no_thread, seen_before_entry, bad_func});
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(path, problems);
  EXPECT_EQ(t.info.skipped, 3u);
  EXPECT_TRUE(t.never_returned.empty());
}

TEST(EntryEvidence, VersionOneTracesAreReadWithAWarningAndNewerOnesRefused) {
  auto h = make_header(make_process("j", "h", 10, 0, 4), format::kTraceStateClosed, 0);
  h.layout_version = 1;
  HeaderVerdict v = check_trace_header(h);
  EXPECT_TRUE(v.usable) << v.error;
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("no entry evidence"), std::string::npos);
  h.layout_version = format::kLayoutVersion + 1;
  v = check_trace_header(h);
  EXPECT_FALSE(v.usable);
  EXPECT_NE(v.error.find("reads versions 1 to " + std::to_string(format::kLayoutVersion)),
            std::string::npos)
      << v.error;
}

TEST(EntryEvidence, SalvageTurnsTheDeadProcesssActiveSlotsIntoRecords) {
  TempDir dir;
  const std::string job = "entry-" + std::to_string(::getpid());
  const int64_t pid = dead_pid();
  const std::string path = dir.file("ncclwatch.h." + std::to_string(pid) + ".trace");
  TestSegment seg(job, "h", pid, 8, path);
  seg.put(0, make_call(Func::kAllReduce, 0x77, 0, 1000, 1100));
  seg.set_positions(0, 1);
  // Thread 42 died inside #1; thread 43 had returned from its last call; thread 44 died while
  // writing its slot (odd version: torn, left out).
  auto& slots = seg.header().in_flight;
  slots[0].owner_tid = 42;
  format::in_flight_enter(slots[0], entry(Func::kAllReduce, 0x77, 1, 2000));
  slots[1].owner_tid = 43;
  format::in_flight_enter(slots[1], entry(Func::kAllReduce, 0x88, 0, 1500));
  format::in_flight_leave(slots[1]);
  slots[2].owner_tid = 44;
  format::in_flight_enter(slots[2], entry(Func::kAllReduce, 0x99, 0, 1600));
  slots[2].version += 1;

  const SalvageResult r = salvage_segment(seg.name(), {});
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_EQ(r.appended, 1u);
  EXPECT_EQ(r.in_flight, 1u);
  EXPECT_NE(describe(r).find("1 call(s) in flight"), std::string::npos) << describe(r);

  std::vector<model::InputProblem> problems;
  const auto t = load_rank(path, problems);
  ASSERT_EQ(t.never_returned.size(), 1u);
  EXPECT_EQ(t.never_returned[0].tid, 42u);
  EXPECT_EQ(t.never_returned[0].seq, 1u);
  EXPECT_EQ(t.never_returned[0].comm_id, 0x77u);
}

}  // namespace
}  // namespace ncclwatch::trace

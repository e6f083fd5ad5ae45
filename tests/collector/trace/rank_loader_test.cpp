// load_rank: every record kind into the model, seq unwrapping, names, identity, invalid records.
#include "trace/rank_loader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

using namespace testing;  // NOLINT: the fixture's builders

std::string all_lines(const std::vector<model::InputProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += p.source + ": " + p.message + "\n";
  return out;
}

TEST(LoadRank, EveryRecordKindRoundTrips) {
  TempDir dir;
  const std::string long_name(150, 'k');  // three chunks
  std::vector<Record> rs;
  rs.push_back(make_clock(500, 1'700'000'000'000'000'500, 80));
  rs.push_back(make_unique_id(0xfeed, 600));
  rs.push_back(make_comm(0xc0, 4, 2, 1000, 0xbb, Func::kCommSplit));
  rs.push_back(make_identity(6, 16, 2, 3, "0000:1b:00.0"));
  for (auto& s : make_string(5, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")) rs.push_back(s);
  for (auto& s : make_string(9, long_name)) rs.push_back(s);
  rs.push_back(make_group(Func::kGroupStart, 1, 1900));
  Record call = make_call(Func::kAllReduce, 0xc0, 0, 2000, 2100, 256);
  call.call.group_id = 1;
  call.prefix.flags = format::kCallInGroup;
  call.prefix.u8b = 0;
  rs.push_back(call);
  rs.push_back(make_group(Func::kGroupEnd, 1, 2150));
  rs.push_back(make_call(Func::kSend, 0xc0, 0, 2200, 2300, 8, 3));
  rs.push_back(make_call(Func::kRecv, 0xc0, 0, 2400, 2500, 8, 1));
  rs.push_back(make_launch(2010, 2020, 0xabc0, 77));
  rs.push_back(make_link(2015, 0xc0, 0, 77));
  rs.push_back(make_kernel(2050, 2900, 77, 5, true, 13, 3));
  rs.push_back(make_kernel(3000, 3100, 78, 9, false));
  rs.push_back(make_coll_gpu(2050, 2900, 0xc0, 0));
  rs.push_back(make_nvtx(1500, 3500, 9));
  rs.push_back(make_comm_end(0xc0, 4000));
  rs.push_back(make_sched(4242, 4100, 9000, 700, 12));
  rs.push_back(make_sched(4242, 2100, 5000, 300, 6));  // out of order: sorted by (tid, time)
  rs.push_back(make_sched(17, 4100, 10, 20, 3));
  const std::string path = write_rank(dir.path(), "job1", "nodeA", 321, -1, -1, rs);

  std::vector<model::InputProblem> problems;
  const model::RankTrace t = load_rank(path, problems);
  EXPECT_TRUE(problems.empty()) << all_lines(problems);

  EXPECT_EQ(t.info.rank, 6);  // learned late, from the identity record
  EXPECT_EQ(t.info.world_size, 16);
  EXPECT_EQ(t.info.local_rank, 2);
  EXPECT_EQ(t.info.device, 3);
  EXPECT_EQ(t.info.pci_bus_id, "0000:1b:00.0");
  EXPECT_EQ(t.info.host, "nodeA");
  EXPECT_EQ(t.info.job, "job1");
  EXPECT_EQ(t.info.pid, 321);
  EXPECT_EQ(t.info.source, path);
  EXPECT_EQ(t.info.records, rs.size());
  EXPECT_EQ(t.info.skipped, 0u);
  EXPECT_TRUE(t.info.complete);
  EXPECT_FALSE(t.info.salvaged);
  EXPECT_EQ(t.info.timing, model::TimingSource::kCupti);
  EXPECT_EQ(t.info.wall_offset_ns, 1'700'000'000'000'000'000);

  ASSERT_EQ(t.comms.size(), 1u);
  EXPECT_EQ(t.comms[0].id, 0xc0u);
  EXPECT_EQ(t.comms[0].parent, 0xbbu);
  EXPECT_EQ(t.comms[0].nranks, 4);
  EXPECT_EQ(t.comms[0].rank, 2);
  EXPECT_EQ(t.comms[0].device, 2);
  EXPECT_EQ(t.comms[0].created_by, Func::kCommSplit);
  EXPECT_EQ(t.comms[0].created_ns, 1000);

  ASSERT_EQ(t.calls.size(), 3u);
  const auto& ar = t.calls[0];
  EXPECT_EQ(ar.func, Func::kAllReduce);
  EXPECT_EQ(ar.enter_ns, 2000);
  EXPECT_EQ(ar.exit_ns, 2100);
  EXPECT_EQ(ar.comm_id, 0xc0u);
  EXPECT_EQ(ar.seq, 0u);
  EXPECT_EQ(ar.count, 256u);
  EXPECT_EQ(ar.bytes(), 1024u);
  EXPECT_EQ(ar.stream, 0xabc0u);
  EXPECT_EQ(ar.peer, -1);
  EXPECT_EQ(ar.group_id, 1u);
  EXPECT_EQ(ar.datatype, 7);
  EXPECT_EQ(ar.flags, format::kCallInGroup);
  EXPECT_EQ(ar.kernel, -1);
  EXPECT_EQ(t.calls[1].func, Func::kSend);
  EXPECT_EQ(t.calls[1].peer, 3);
  EXPECT_EQ(t.calls[2].func, Func::kRecv);
  EXPECT_EQ(t.calls[2].bytes(), 32u);

  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.name_of(t.kernels[0].name), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_TRUE(t.kernels[0].nccl);
  EXPECT_EQ(t.kernels[0].stream, 13u);
  EXPECT_EQ(t.kernels[0].device, 3);
  EXPECT_EQ(t.kernels[0].correlation, 77u);
  EXPECT_EQ(t.kernels[0].call, -1);
  EXPECT_EQ(t.name_of(t.kernels[1].name), long_name);
  EXPECT_FALSE(t.kernels[1].nccl);

  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].correlation, 77u);
  EXPECT_EQ(t.launches[0].stream, 0xabc0u);
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.name_of(t.ranges[0].name), long_name);
  EXPECT_EQ(t.ranges[0].start_ns, 1500);
  ASSERT_EQ(t.links.size(), 1u);
  EXPECT_EQ(t.links[0].correlation, 77u);
  ASSERT_EQ(t.coll_gpu.size(), 1u);
  EXPECT_EQ(t.coll_gpu[0].end_ns, 2900);
  ASSERT_EQ(t.sched.size(), 3u);
  EXPECT_EQ(t.sched[0].tid, 17u);
  EXPECT_EQ(t.sched[0].wait_ns, 20u);
  EXPECT_EQ(t.sched[1].tid, 4242u);
  EXPECT_EQ(t.sched[1].t_ns, 2100);
  EXPECT_EQ(t.sched[1].on_cpu_ns, 5000u);
  EXPECT_EQ(t.sched[1].wait_ns, 300u);
  EXPECT_EQ(t.sched[2].t_ns, 4100);
}

// Layout version 4 added SchedRecord; a trace of version 3 (written before it) still loads,
// every record of it used, with no CPU-scheduling samples.
TEST(LoadRank, ATraceOfTheLayoutBeforeSchedRecordsStillLoads) {
  TempDir dir;
  static_assert(format::kLayoutVersion >= 4, "version 3 is the one before SchedRecord");
  auto header = make_header(make_process("j", "h", 5, 1, 2), format::kTraceStateClosed, 3);
  header.layout_version = 3;
  const std::vector<format::Record> records = {make_clock(50, 1'700'000'000'000'000'050, 10),
                                               make_call(Func::kAllReduce, 1, 0, 100, 200),
                                               make_kernel(120, 180, 1, 0, true)};
  write_trace(dir.file("v3.trace"), header, records);
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(dir.file("v3.trace"), problems);
  EXPECT_TRUE(problems.empty()) << all_lines(problems);
  EXPECT_EQ(t.info.records, 3u);
  EXPECT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.kernels.size(), 1u);
  EXPECT_TRUE(t.sched.empty());
  EXPECT_EQ(t.info.timing, model::TimingSource::kCupti);
}

TEST(LoadRank, ImplausibleSchedRecordsAreSkipped) {
  TempDir dir;
  std::vector<Record> rs = {make_sched(0, 100, 1, 1), make_sched(5, -1, 1, 1),
                            make_sched(5, 100, uint64_t{1} << 63, 1),
                            make_sched(5, 100, 1, uint64_t{1} << 63), make_sched(5, 200, 3, 4)};
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, rs), problems);
  ASSERT_EQ(t.sched.size(), 1u);
  EXPECT_EQ(t.sched[0].wait_ns, 4u);
  EXPECT_EQ(t.info.skipped, 4u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("1 x sched record without a thread"), std::string::npos)
      << problems[0].message;
  EXPECT_NE(problems[0].message.find("1 x negative timestamp"), std::string::npos);
  EXPECT_NE(problems[0].message.find("2 x implausible timestamp"), std::string::npos);
}

TEST(LoadRank, UnwrapsSequenceNumbersAcrossTwoToThe32) {
  TempDir dir;
  std::vector<Record> rs;
  const uint64_t first = (1ULL << 32) - 5;
  for (uint64_t s = first; s < first + 10; ++s) {
    const auto t = static_cast<int64_t>(100 * (s - first));
    rs.push_back(make_call(Func::kAllReduce, 0xaa, static_cast<uint32_t>(s), t, t + 50));
    rs.push_back(make_call(Func::kSend, 0xaa, static_cast<uint32_t>(s), t + 60, t + 70, 4, 1));
  }
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 2, rs), problems);
  ASSERT_EQ(t.calls.size(), 20u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(t.calls[2 * i].seq, first + i);
    EXPECT_EQ(t.calls[2 * i + 1].seq, first + i);
  }
  EXPECT_EQ(t.calls.back().seq, (1ULL << 32) + 4);
}

TEST(LoadRank, SortsOutOfOrderRecords) {
  TempDir dir;
  std::vector<Record> rs = {make_call(Func::kAllReduce, 1, 1, 500, 600),
                            make_call(Func::kAllReduce, 1, 0, 100, 200),
                            make_kernel(900, 950, 2, 0, true), make_kernel(300, 350, 1, 0, true)};
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, rs), problems);
  ASSERT_EQ(t.calls.size(), 2u);
  EXPECT_EQ(t.calls[0].seq, 0u);
  EXPECT_EQ(t.calls[1].seq, 1u);
  EXPECT_EQ(t.kernels[0].start_ns, 300);
}

TEST(LoadRank, InvalidRecordsAreSkippedAndCounted) {
  TempDir dir;
  std::vector<Record> rs;
  rs.push_back(make_call(Func::kAllReduce, 1, 0, 100, 200));
  Record unknown = make_call(Func::kAllReduce, 1, 1, 300, 400);
  unknown.prefix.kind = static_cast<format::RecordKind>(200);
  rs.push_back(unknown);
  rs.push_back(make_call(Func::kAllReduce, 1, 2, 500, 450));  // exits before it enters
  Record bad_func = make_call(Func::kAllReduce, 1, 3, 600, 700);
  bad_func.prefix.u8a = 99;
  rs.push_back(bad_func);
  Record zero;
  std::memset(&zero, 0, sizeof zero);
  rs.push_back(zero);
  rs.push_back(make_call(Func::kAllReduce, 1, 4, 800, 900));
  rs.push_back(unknown);
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, rs), problems);
  EXPECT_EQ(t.calls.size(), 2u);
  EXPECT_EQ(t.info.records, 7u);
  EXPECT_EQ(t.info.skipped, 5u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message,
            "skipped 5 invalid record(s): 2 x unknown record kind (first at record #1); "
            "1 x call exits before it enters (first at record #2); 1 x call with a non-call func "
            "(first at record #3); 1 x all-zero record kind (never written) (first at record #4)");
}

TEST(LoadRank, TornFileKeepsValidRecordsAndSaysSo) {
  TempDir dir;
  std::vector<Record> rs = {make_call(Func::kAllReduce, 1, 0, 100, 200),
                            make_call(Func::kAllReduce, 1, 1, 300, 400)};
  const std::string path = dir.file("t.trace");
  write_trace(path, make_header(make_process("j", "h", 5, 1, 2), format::kTraceStateOpen, 0), rs,
              40);
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(path, problems);
  EXPECT_EQ(t.calls.size(), 2u);
  EXPECT_FALSE(t.info.complete);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].message.find("last record torn (40 of 64 bytes)"), std::string::npos);
  EXPECT_NE(problems[1].message.find("not closed"), std::string::npos);
}

TEST(LoadRank, UnusableHeaderGivesEmptyTraceAndOneLine) {
  TempDir dir;
  auto header = make_header(make_process("j", "h", 5, 1, 2), format::kTraceStateClosed, 0);
  header.layout_version = format::kLayoutVersion + 1;
  write_trace(dir.file("v.trace"), header, {make_call(Func::kAllReduce, 1, 0, 100, 200)});
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(dir.file("v.trace"), problems);
  EXPECT_EQ(t.info.records, 0u);
  EXPECT_TRUE(t.calls.empty());
  EXPECT_FALSE(t.info.complete);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, "layout version " + std::to_string(format::kLayoutVersion + 1) +
                                     ", this ncclwatch reads versions 1 to " +
                                     std::to_string(format::kLayoutVersion));
}

// Each loss counter of the header reaches RankInfo::losses in its own place; files of layout
// versions 1 and 2 had that space reserved, so whatever it holds there is not a count.
TEST(LoadRank, LossCountersAreReadFromVersionThreeHeadersOnly) {
  TempDir dir;
  auto header = make_header(make_process("j", "h", 5, 1, 2), format::kTraceStateClosed, 1);
  const std::vector<format::Record> records = {make_call(Func::kAllReduce, 1, 0, 100, 200)};
  header.dropped = 1;
  header.cupti_dropped = 2;
  uint64_t n = 3;
  for (const auto& f : format::kLossFields) header.losses.*f.counter = n++;
  write_trace(dir.file("v3.trace"), header, records);
  std::vector<model::InputProblem> problems;
  auto t = load_rank(dir.file("v3.trace"), problems);
  for (const auto& p : problems) ADD_FAILURE() << p.message;
  uint64_t expected = 1;
  for (const auto& e : t.info.losses.entries()) EXPECT_EQ(e.count, expected++) << e.key;
  EXPECT_EQ(t.info.losses.dropped(), 3u);
  EXPECT_EQ(t.info.losses.lost(), expected * (expected - 1) / 2 - 3);

  header.layout_version = 2;
  write_trace(dir.file("v2.trace"), header, records);
  t = load_rank(dir.file("v2.trace"), problems);
  EXPECT_EQ(t.info.losses.ring_full, 1u);
  EXPECT_EQ(t.info.losses.cupti_dropped, 2u);
  EXPECT_EQ(t.info.losses.lost(), 0u);
}

TEST(LoadRank, StepSummariesAndWindows) {
  TempDir dir;
  std::vector<Record> rs;
  for (auto& s : make_string(0x80000001u, "step time +18% since 03:12:05 UTC")) rs.push_back(s);
  rs.push_back(make_window(format::WindowEvent::kOpen, 0, format::WindowTrigger::kWholeRun, 100, 0,
                           0, format::kNoStep));
  rs.push_back(make_step(1, 2000, 10, 5, 2000, 9000, 7, 1, 2));  // out of order: sorted
  rs.push_back(make_step(0, 1000, 1, 1, 1000, 1500, 0, 1, 0));
  rs.push_back(make_window(format::WindowEvent::kOpen, 42, format::WindowTrigger::kStepTime, 1500,
                           0, 1, 3, 0x80000001u));
  rs.push_back(make_window(format::WindowEvent::kClose, 42, format::WindowTrigger::kStepTime, 1500,
                           12000, 1, 3, 0x80000001u));
  rs.push_back(make_window(format::WindowEvent::kClose, 0, format::WindowTrigger::kWholeRun, 100,
                           20000, 0, 3));
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, rs), problems, true);
  EXPECT_TRUE(problems.empty()) << all_lines(problems);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].step, 0u);
  EXPECT_EQ(t.steps[1].sync_ns, 9000);
  EXPECT_EQ(t.steps[1].prefix.tid, 5u);
  ASSERT_EQ(t.windows.size(), 2u);  // open and close joined by id, in start order
  EXPECT_EQ(t.windows[0].id, 0u);
  EXPECT_TRUE(t.windows[0].closed);
  EXPECT_EQ(t.windows[0].end_ns, 20000);
  EXPECT_EQ(t.windows[1].trigger, format::WindowTrigger::kStepTime);
  EXPECT_EQ(t.windows[1].first_step, 1u);
  EXPECT_EQ(t.windows[1].end_step, 3u);
  EXPECT_EQ(t.windows[1].text, "step time +18% since 03:12:05 UTC");
}

TEST(LoadRank, InvalidStepsAndWindowsAreSkipped) {
  TempDir dir;
  std::vector<Record> rs;
  rs.push_back(make_step(0, 1000, 1, 1, 500, 0, 0, 0, 0));     // arrives before it starts
  rs.push_back(make_step(0, 1000, 1, 1, 1000, 900, 0, 0, 0));  // GPU end before the arrival
  rs.push_back(make_step(0, 1000, 1, 1, 1000, 0, 2, 0, 0));    // compute longer than the step
  Record bad_source = make_step(0, 1000, 1, 1, 0, 0, 0, 0, 0);
  bad_source.prefix.u8a = 9;
  rs.push_back(bad_source);
  rs.push_back(make_window(format::WindowEvent::kClose, 7, format::WindowTrigger::kOnDemand, 50, 10,
                           0, 1));  // ends before it starts
  rs.push_back(make_step(3, 1000, 5, 1, 0, 0, format::kStepUnknownUs, format::kStepUnknownUs,
                         format::kStepUnknownUs));  // valid: host-only
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, rs), problems, true);
  EXPECT_EQ(t.steps.size(), 1u);
  EXPECT_TRUE(t.windows.empty());
  EXPECT_EQ(t.info.skipped, 5u);
}

// Every older layout still loads: versions 1-4 hold the same record layouts minus newer kinds,
// and header fields that were reserved then (LossCounts' last field, the part number) read as
// zero whatever bytes they hold.
TEST(LoadRank, EveryOlderLayoutStillLoads) {
  TempDir dir;
  const std::vector<Record> rs = {make_comm(0xc0, 2, 0, 10),
                                  make_call(Func::kAllReduce, 0xc0, 0, 100, 200),
                                  make_kernel(120, 180, 1, 0, true), make_clock(5, 10, 3)};
  for (uint32_t version = format::kMinTraceLayoutVersion; version < format::kLayoutVersion;
       ++version) {
    SCOPED_TRACE("version " + std::to_string(version));
    auto header =
        make_header(make_process("j", "h", 5, 0, 2), format::kTraceStateClosed, rs.size(), 1);
    header.layout_version = version;
    header.process.part = 7;              // ProcessInfo::reserved then: garbage is ignored
    header.losses.detail_evicted = 1234;  // LossCounts::reserved in versions 3-4
    std::vector<Record> records = rs;
    if (version >= 4) records.push_back(make_sched(9, 150, 5000, 600));  // SchedRecord since 4
    header.records = records.size();
    const std::string path = dir.file("v" + std::to_string(version) + ".trace");
    write_trace(path, header, records);
    std::vector<model::InputProblem> problems;
    const auto t = load_rank(path, problems);
    EXPECT_EQ(t.calls.size(), 1u);
    EXPECT_EQ(t.kernels.size(), 1u);
    EXPECT_TRUE(t.steps.empty());
    EXPECT_TRUE(t.windows.empty());
    EXPECT_EQ(t.sched.size(), version >= 4 ? 1u : 0u);
    EXPECT_EQ(t.info.losses.counts.detail_evicted, 0u);
  }
}

TEST(LoadRank, NamesWithMissingChunksAndUnknownIds) {
  TempDir dir;
  auto chunks = make_string(3, std::string(120, 'a') + "tail");  // 3 chunks
  std::vector<Record> rs = {chunks[0], chunks[2]};               // the middle one dropped
  rs.push_back(make_kernel(10, 20, 1, 3, false));
  rs.push_back(make_kernel(30, 40, 2, 44, false));  // id never defined
  // Chunks arriving after their user and out of order still assemble.
  auto late = make_string(8, std::string(60, 'b'));
  rs.push_back(make_kernel(50, 60, 3, 8, false));
  rs.push_back(late[1]);
  rs.push_back(late[0]);
  // A very large id (the loader's flat table does not cover it) still resolves.
  for (auto& c : make_string(3'000'000'000u, "big")) rs.push_back(c);
  rs.push_back(make_kernel(70, 80, 4, 3'000'000'000u, false));
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, rs), problems);
  ASSERT_EQ(t.kernels.size(), 4u);
  EXPECT_EQ(t.name_of(t.kernels[3].name), "big");
  EXPECT_EQ(t.name_of(t.kernels[0].name), std::string(56, 'a'));
  EXPECT_EQ(t.name_of(t.kernels[1].name), "<name #44 missing>");
  EXPECT_EQ(t.name_of(t.kernels[2].name), std::string(60, 'b'));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, "1 name(s) incomplete (string chunks missing)");
}

TEST(LoadRank, TimingSourceAndClock) {
  TempDir dir;
  std::vector<model::InputProblem> problems;
  // Lite mode: CUDA-event intervals only.
  std::vector<Record> rs = {make_call(Func::kAllReduce, 1, 0, 100, 200),
                            make_coll_gpu(150, 400, 1, 0), make_clock(1000, 5000, 300),
                            make_clock(2000, 6100, 40), make_clock(3000, 7300, 90)};
  auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, rs), problems);
  EXPECT_EQ(t.info.timing, model::TimingSource::kEvents);
  EXPECT_EQ(t.info.wall_offset_ns, 4100);  // the narrowest anchor window wins
  // Host only, though the header claims CUPTI: said in one line.
  const std::string path = dir.file("host.trace");
  write_trace(path, make_header(make_process("j", "h", 2, 1, 2), format::kTraceStateClosed, 1, 1),
              {make_call(Func::kAllReduce, 1, 0, 100, 200)});
  problems.clear();
  t = load_rank(path, problems);
  EXPECT_EQ(t.info.timing, model::TimingSource::kHostOnly);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("no kernel records"), std::string::npos);
}

TEST(LoadRank, CommRecordsOfFailedInitsAreIgnored) {
  TempDir dir;
  Record failed = make_comm(0xd0, 4, 0, 10);
  failed.prefix.u8b = 5;  // ncclInvalidUsage: no comm was created
  Record nocolor = make_comm(0, 0, 0, 20, 0xd0, Func::kCommSplit);
  std::vector<Record> rs = {failed, nocolor, make_comm(0xd1, 2, 1, 30), make_comm(0xd1, 2, 1, 40)};
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, rs), problems);
  EXPECT_TRUE(problems.empty()) << all_lines(problems);
  ASSERT_EQ(t.comms.size(), 1u);
  EXPECT_EQ(t.comms[0].id, 0xd1u);
  EXPECT_EQ(t.comms[0].created_ns, 30);
}

TEST(LoadRank, HeaderOnlyFileSaysNoRecords) {
  TempDir dir;
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(write_rank(dir.path(), "j", "h", 1, 0, 1, {}), problems);
  EXPECT_EQ(t.info.records, 0u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, "no records");
}

}  // namespace
}  // namespace ncclwatch::trace

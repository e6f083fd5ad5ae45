// `ncclwatch dump` logic: JSON lines with every field, names resolved, kinds filter, errors.
#include "trace/dump.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "process.h"
#include "trace/record_json.h"
#include "trace/record_names.h"
#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

using namespace testing;  // NOLINT: the fixture's builders

struct Captured {
  int rc = 0;
  std::vector<nlohmann::json> lines;
  std::string err;
};

using test_support::slurp;

Captured run_dump(const std::string& path, const DumpOptions& options) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  Captured c;
  c.rc = dump_trace(path, options, out, err);
  std::istringstream lines(slurp(out));
  for (std::string line; std::getline(lines, line);) c.lines.push_back(nlohmann::json::parse(line));
  c.err = slurp(err);
  return c;
}

TEST(Dump, EveryRecordOneLineWithNamesResolved) {
  TempDir dir;
  std::vector<Record> rs = {make_kernel(10, 20, 5, 3, true)};  // name defined after its use
  for (auto& s : make_string(3, "ncclDevKernel_Broadcast")) rs.push_back(s);
  rs.push_back(make_call(Func::kBroadcast, 0xfeedface12345678ULL, 9, 30, 40, 100, 0));
  rs.push_back(make_comm(0x42, 8, 3, 1));
  Record bad = make_call(Func::kAllReduce, 1, 1, 50, 10);
  rs.push_back(bad);
  const auto path = write_rank(dir.path(), "job", "h", 1, 3, 8, rs);
  DumpOptions options;
  options.header = true;
  const auto c = run_dump(path, options);
  EXPECT_EQ(c.rc, 0);
  ASSERT_EQ(c.lines.size(), 6u);
  EXPECT_EQ(c.lines[0]["kind"], "header");
  EXPECT_EQ(c.lines[0]["rank"], 3);
  EXPECT_EQ(c.lines[0]["state"], "closed");
  EXPECT_EQ(c.lines[1]["kind"], "kernel");
  EXPECT_EQ(c.lines[1]["name"], "ncclDevKernel_Broadcast");
  EXPECT_EQ(c.lines[1]["nccl"], true);
  EXPECT_EQ(c.lines[3]["func"], "broadcast");
  EXPECT_EQ(c.lines[3]["comm_id"], "0xfeedface12345678");
  EXPECT_EQ(c.lines[3]["seq"], 9);
  EXPECT_EQ(c.lines[3]["peer"], 0);
  EXPECT_EQ(c.lines[3]["bytes"], 400);
  EXPECT_EQ(c.lines[3]["index"], 2);
  EXPECT_EQ(c.lines[4]["nranks"], 8);
  EXPECT_EQ(c.lines[5]["invalid"], "call exits before it enters");
  EXPECT_NE(c.err.find("5 records, 5 printed, 1 invalid; job 'job' host 'h' pid 1 rank 3"),
            std::string::npos)
      << c.err;
}

// The header line carries every loss counter; the summary line on stderr says what was lost.
TEST(Dump, HeaderAndSummaryShowTheLosses) {
  TempDir dir;
  auto header = make_header(make_process("job", "h", 1, 0, 2), format::kTraceStateClosed, 1);
  header.dropped = 7;
  uint64_t n = 1;
  for (const auto& f : format::kLossFields) header.losses.*f.counter = 10 * n++;
  const auto path = dir.file("l.trace");
  write_trace(path, header, {make_call(Func::kAllReduce, 1, 0, 10, 20)});
  DumpOptions options;
  options.header = true;
  const auto c = run_dump(path, options);
  EXPECT_EQ(c.rc, 0);
  ASSERT_GE(c.lines.size(), 1u);
  EXPECT_EQ(c.lines[0]["dropped"], 7);
  n = 1;
  for (const auto& f : format::kLossFields)
    EXPECT_EQ(c.lines[0]["losses"][f.key], 10 * n++) << f.key;
  EXPECT_NE(c.err.find("lost: ring full 7 records; lite mode untimed 10 calls; string table full "
                       "20 names"),
            std::string::npos)
      << c.err;
}

TEST(Dump, KindsFilter) {
  TempDir dir;
  const auto path =
      write_rank(dir.path(), "job", "h", 1, 0, 1,
                 {make_call(Func::kAllReduce, 1, 0, 1, 2), make_kernel(1, 2, 1, 0, false),
                  make_launch(1, 2, 3, 4), make_call(Func::kAllReduce, 1, 1, 3, 4)});
  std::string error;
  const auto kinds = parse_kinds("call,launch", error);
  ASSERT_TRUE(kinds);
  DumpOptions options;
  options.kinds = *kinds;
  const auto c = run_dump(path, options);
  ASSERT_EQ(c.lines.size(), 3u);
  EXPECT_EQ(c.lines[0]["kind"], "call");
  EXPECT_EQ(c.lines[1]["kind"], "launch");
  EXPECT_EQ(c.lines[2]["index"], 3);
  EXPECT_FALSE(parse_kinds("call,nope", error));
  EXPECT_NE(error.find("unknown record kind 'nope'"), std::string::npos);
}

TEST(Dump, UnreadableFileIsAnErrorAndTornTailAWarning) {
  TempDir dir;
  write_bytes(dir.file("x"), std::vector<char>(500, 'x'));
  auto c = run_dump(dir.file("x"), {});
  EXPECT_EQ(c.rc, 1);
  EXPECT_TRUE(c.lines.empty());
  EXPECT_NE(c.err.find("not an ncclwatch trace (bad magic"), std::string::npos) << c.err;

  write_trace(dir.file("t"),
              make_header(make_process("j", "h", 1, 0, 1), format::kTraceStateOpen, 0),
              {make_call(Func::kAllReduce, 1, 0, 1, 2)}, 5);
  c = run_dump(dir.file("t"), {});
  EXPECT_EQ(c.rc, 0);
  EXPECT_EQ(c.lines.size(), 1u);
  EXPECT_NE(c.err.find("last record torn (5 of 64 bytes)"), std::string::npos) << c.err;
}

// `dump FILE > /dev/full` (or to a full disk) wrote nothing: one line and a failure, not 0.
TEST(Dump, OutputThatCannotBeWrittenIsAnError) {
  TempDir dir;
  std::vector<Record> rs;
  for (uint32_t i = 0; i < 2000; ++i) rs.push_back(make_call(Func::kAllReduce, 1, i, i, i + 1));
  const std::string path = write_rank(dir.path(), "j", "h", 1, 0, 1, rs);
  std::FILE* full = std::fopen("/dev/full", "w");
  if (full == nullptr) GTEST_SKIP() << "no /dev/full here";
  std::FILE* err = std::tmpfile();
  const int rc = dump_trace(path, {}, full, err);
  std::fclose(full);
  const std::string text = slurp(err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(text.find("ncclwatch: cannot write the output: No space left on device"),
            std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

// A FIFO or a symlink where a trace was expected: one line at once, never a wait for a writer.
TEST(Dump, FifoAndSymlinkAreRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("fifo.trace").c_str(), 0600), 0);
  auto c = run_dump(dir.file("fifo.trace"), {});
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("a FIFO, not a regular file"), std::string::npos) << c.err;
  const std::string real = write_rank(dir.path(), "j", "h", 1, 0, 1, {});
  ASSERT_EQ(::symlink(real.c_str(), dir.file("link.trace").c_str()), 0);
  c = run_dump(dir.file("link.trace"), {});
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("a symbolic link (not followed"), std::string::npos) << c.err;
}

// Every kind has its own field writer: beyond index, kind and flags, each names its fields.
TEST(RecordJson, EveryKindWritesItsFields) {
  StringTable names;
  names.finish();
  for (uint8_t k = 0; k <= static_cast<uint8_t>(format::RecordKind::kCount); ++k) {
    Record r{};
    r.prefix.kind = static_cast<format::RecordKind>(k);
    const auto j = record_to_json(r, 7, names);
    EXPECT_EQ(j["index"], 7);
    EXPECT_EQ(j["kind"], kind_name(k));
    EXPECT_TRUE(j.contains("tid") || j.contains("window_ns") || j.contains("stream_id") ||
                j.contains("string_id") || j.contains("ref_seq") || j.contains("text_id") ||
                j.contains("mode"))
        << j.dump();
  }
}

TEST(RecordJson, SchedRecordFields) {
  StringTable names;
  names.finish();
  const auto j = record_to_json(testing::make_sched(4242, 1000, 2000, 300, 7), 3, names);
  EXPECT_EQ(j["kind"], "sched");
  EXPECT_EQ(j["tid"], 4242);
  EXPECT_EQ(j["t_ns"], 1000);
  EXPECT_EQ(j["on_cpu_ns"], 2000);
  EXPECT_EQ(j["wait_ns"], 300);
  EXPECT_EQ(j["timeslices"], 7);
  EXPECT_FALSE(j.contains("invalid"));
  EXPECT_EQ(kind_from_name("sched"), format::RecordKind::kSched);
}

// Unknown enum values keep their number (record_names.h): nothing untrusted is hidden.
TEST(RecordJson, UnknownValuesKeepTheirNumber) {
  Record r{};
  r.prefix.kind = format::RecordKind::kInFlight;
  r.prefix.u8b = 9;
  StringTable names;
  names.finish();
  EXPECT_EQ(record_to_json(r, 0, names)["source"], "unknown(9)");
  r.prefix.u8b = static_cast<uint8_t>(format::InFlightSource::kWatchdog);
  EXPECT_EQ(record_to_json(r, 0, names)["source"], "watchdog");
  EXPECT_EQ(trace_state_name(format::kTraceStateSalvaged), "salvaged");
  EXPECT_EQ(trace_state_name(0), "unknown(0)");
  EXPECT_EQ(trace_state_name(4), "unknown(4)");
}

}  // namespace
}  // namespace ncclwatch::trace

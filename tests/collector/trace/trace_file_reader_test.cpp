// TraceFileReader: header checks, torn tails, chunked iteration.
#include "trace/trace_file_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

using namespace testing;  // NOLINT: the fixture's builders

std::vector<Record> some_calls(std::size_t n) {
  std::vector<Record> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(
        make_call(Func::kAllReduce, 0x11, static_cast<uint32_t>(i), 1000 + 10 * i, 1005 + 10 * i));
  }
  return out;
}

format::TraceHeader closed_header(uint64_t records) {
  return make_header(make_process("job", "host", 1, 0, 1), format::kTraceStateClosed, records);
}

TEST(TraceFileReader, ReadsEveryRecordInChunks) {
  TempDir dir;
  const auto records = some_calls(1000);
  write_trace(dir.file("a.trace"), closed_header(records.size()), records);
  TraceFileReader reader(64);  // many chunks, the last one partial
  ASSERT_TRUE(reader.open(dir.file("a.trace"))) << reader.error();
  EXPECT_TRUE(reader.warnings().empty());
  EXPECT_TRUE(reader.closed());
  EXPECT_EQ(reader.record_count(), 1000u);
  uint64_t seen = 0, chunks = 0;
  for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next()) {
    ++chunks;
    for (const auto& r : chunk) {
      EXPECT_EQ(r.call.seq, seen);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 1000u);
  EXPECT_EQ(chunks, 16u);
  reader.rewind();
  EXPECT_EQ(reader.next().size(), 64u);
}

TEST(TraceFileReader, TornTailKeepsWholeRecords) {
  TempDir dir;
  const auto records = some_calls(10);
  write_trace(dir.file("a.trace"), closed_header(11), records, 23);
  TraceFileReader reader;
  ASSERT_TRUE(reader.open(dir.file("a.trace")));
  EXPECT_TRUE(reader.torn_tail());
  EXPECT_EQ(reader.record_count(), 10u);
  ASSERT_EQ(reader.warnings().size(), 2u);
  EXPECT_NE(reader.warnings()[0].find("last record torn (23 of 64 bytes)"), std::string::npos);
  EXPECT_NE(reader.warnings()[1].find("header says 11 records, file holds 10"), std::string::npos);
  EXPECT_EQ(reader.next().size(), 10u);
}

TEST(TraceFileReader, HeaderOnlyFileHasNoRecords) {
  TempDir dir;
  write_trace(dir.file("a.trace"),
              make_header(make_process("job", "host", 1, 0, 1), format::kTraceStateOpen, 0), {});
  TraceFileReader reader;
  ASSERT_TRUE(reader.open(dir.file("a.trace")));
  EXPECT_EQ(reader.record_count(), 0u);
  EXPECT_FALSE(reader.closed());
  ASSERT_EQ(reader.warnings().size(), 1u);
  EXPECT_NE(reader.warnings()[0].find("not closed"), std::string::npos);
  EXPECT_TRUE(reader.next().empty());
}

TEST(TraceFileReader, HeaderCutShortIsTruncatedNotForeign) {
  TempDir dir;
  write_trace(dir.file("a.trace"), closed_header(0), {});
  auto bytes = read_bytes(dir.file("a.trace"));
  bytes.resize(100);
  write_bytes(dir.file("a.trace"), bytes);
  TraceFileReader reader;
  EXPECT_FALSE(reader.open(dir.file("a.trace")));
  EXPECT_FALSE(reader.foreign());
  EXPECT_EQ(reader.error(), "truncated: header incomplete (100 of 320 bytes)");
}

TEST(TraceFileReader, EmptyFileIsRejected) {
  TempDir dir;
  write_bytes(dir.file("a.trace"), {});
  TraceFileReader reader;
  EXPECT_FALSE(reader.open(dir.file("a.trace")));
  EXPECT_NE(reader.error().find("header incomplete (0 of 320"), std::string::npos);
}

TEST(TraceFileReader, BadMagicIsForeign) {
  TempDir dir;
  auto header = closed_header(0);
  header.magic = 0x1122334455667788ULL;
  write_trace(dir.file("a.trace"), header, some_calls(3));
  TraceFileReader reader;
  EXPECT_FALSE(reader.open(dir.file("a.trace")));
  EXPECT_TRUE(reader.foreign());
  EXPECT_EQ(reader.error(), "not an ncclwatch trace (bad magic 0x1122334455667788)");

  write_bytes(dir.file("notes.txt"), {'h', 'i'});
  EXPECT_FALSE(reader.open(dir.file("notes.txt")));
  EXPECT_FALSE(reader.foreign());  // too short to tell: reported as truncated
}

TEST(TraceFileReader, WrongVersionAndSizesAreRejected) {
  TempDir dir;
  TraceFileReader reader;
  auto header = closed_header(0);
  header.layout_version = 99;
  write_trace(dir.file("a.trace"), header, {});
  EXPECT_FALSE(reader.open(dir.file("a.trace")));
  EXPECT_FALSE(reader.foreign());
  EXPECT_EQ(reader.error(), "layout version 99, this ncclwatch reads versions 1 to " +
                                std::to_string(format::kLayoutVersion));

  header = closed_header(0);
  header.record_size = 128;
  write_trace(dir.file("a.trace"), header, {});
  EXPECT_FALSE(reader.open(dir.file("a.trace")));
  EXPECT_EQ(reader.error(), "record size 128, expected 64");

  header = closed_header(0);
  header.header_size = 4096;
  write_trace(dir.file("a.trace"), header, {});
  EXPECT_FALSE(reader.open(dir.file("a.trace")));
  EXPECT_EQ(reader.error(), "header size 4096, expected 320");
}

TEST(TraceFileReader, MissingFileAndDirectory) {
  TempDir dir;
  TraceFileReader reader;
  EXPECT_FALSE(reader.open(dir.file("nope.trace")));
  EXPECT_NE(reader.error().find("cannot open"), std::string::npos);
  EXPECT_FALSE(reader.open(dir.path()));
  EXPECT_EQ(reader.error(), "not a regular file");
}

TEST(TraceFileReader, OddHeaderFieldsAreWarnings) {
  TempDir dir;
  auto header = closed_header(0);
  header.state = 77;
  std::memset(header.process.host, 'x', sizeof header.process.host);  // no NUL
  header.process.rank = 9;
  header.process.world_size = 4;
  write_trace(dir.file("a.trace"), header, {});
  TraceFileReader reader;
  ASSERT_TRUE(reader.open(dir.file("a.trace")));
  std::string all;
  for (const auto& w : reader.warnings()) all += w + "\n";
  EXPECT_NE(all.find("unknown header state 77"), std::string::npos) << all;
  EXPECT_NE(all.find("host name not NUL-terminated"), std::string::npos) << all;
  EXPECT_NE(all.find("implausible rank 9 of world size 4"), std::string::npos) << all;
}

}  // namespace
}  // namespace ncclwatch::trace

// The trace in parts under a disk budget (record/trace_parts.h): parts roll at an eighth of the
// budget, each a whole trace file naming its part; past the budget the oldest part with detail
// loses its detail (and only that), the summaries stay; a budget that summaries alone pass is
// said once and kept going.
#include "record/trace_parts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ncclwatch/names.h"

namespace ncclwatch::shim {
namespace {

namespace fs = std::filesystem;

struct Dir {
  Dir() {
    char tmpl[] = "/tmp/ncclwatch_parts_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~Dir() { fs::remove_all(path); }
  std::string path;
};

format::Record record(format::RecordKind kind, int64_t t) {
  format::Record r{};
  r.prefix.kind = kind;
  r.call.prefix.u8a = static_cast<uint8_t>(format::Func::kAllReduce);
  r.call.t_enter_ns = t;
  r.call.t_exit_ns = t;
  return r;
}

struct File {
  format::TraceHeader header{};
  std::vector<format::Record> records;
};

File read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  File f;
  if (data.size() < sizeof f.header) return f;
  std::memcpy(&f.header, data.data(), sizeof f.header);
  f.records.resize((data.size() - sizeof f.header) / sizeof(format::Record));
  if (!f.records.empty())  // data() of an empty vector may be null: memcpy must not get it
    std::memcpy(f.records.data(), data.data() + sizeof f.header,
                f.records.size() * sizeof(format::Record));
  return f;
}

std::unique_ptr<TraceParts> open_parts(const Dir& d, uint64_t budget, format::SegmentHeader& seg) {
  seg.process.pid = 42;
  std::strcpy(seg.process.host, "h");
  TraceParts::Options o;
  o.dir = d.path;
  o.host = "h";
  o.pid = 42;
  o.budget_bytes = budget;
  std::string error;
  auto p = TraceParts::open(o, &seg, &error);
  EXPECT_TRUE(p) << error;
  return p;
}

std::size_t count(const File& f, format::RecordKind k) {
  std::size_t n = 0;
  for (const auto& r : f.records) n += r.prefix.kind == k;
  return n;
}

TEST(TraceParts, ASmallTraceIsOneFileAsBefore) {
  Dir d;
  format::SegmentHeader seg{};
  auto p = open_parts(d, 256ULL << 20, seg);
  std::vector<format::Record> rs(100, record(format::RecordKind::kCall, 1));
  ASSERT_TRUE(p->append(rs.data(), rs.size()));
  EXPECT_EQ(p->parts(), 1u);
  ASSERT_TRUE(p->close(seg.process, 0, 0, 0, 0, format::LossCounts{}));
  EXPECT_EQ(p->first_path(), d.path + "/ncclwatch.h.42.trace");
  const File f = read(p->first_path());
  EXPECT_EQ(f.header.process.part, 0u);
  EXPECT_EQ(f.header.records, 100u);
  EXPECT_EQ(f.header.state, format::kTraceStateClosed);
}

TEST(TraceParts, OldestDetailGoesFirstAndSummariesStay) {
  Dir d;
  format::SegmentHeader seg{};
  const uint64_t budget = 1 << 20;  // parts of 128 KiB = 2043 records
  auto p = open_parts(d, budget, seg);
  // 24 batches of 1000 detail records and 10 summaries each: 1.5 MiB, past the budget.
  uint64_t evicted = 0;
  for (int b = 0; b < 24; ++b) {
    std::vector<format::Record> rs;
    for (int i = 0; i < 1000; ++i) rs.push_back(record(format::RecordKind::kKernel, b * 1000 + i));
    for (int i = 0; i < 10; ++i) rs.push_back(record(format::RecordKind::kStep, b));
    ASSERT_TRUE(p->append(rs.data(), rs.size()));
    std::string line;
    evicted += p->enforce_budget(&line);
    EXPECT_TRUE(line.empty()) << line;
    EXPECT_LE(p->bytes(), budget + TraceParts::part_bytes_for(budget));
  }
  EXPECT_GT(p->parts(), 4u);
  EXPECT_GT(evicted, 0u);
  ASSERT_TRUE(p->close(seg.process, 0, 0, 0, 0, format::LossCounts{}));
  // Every summary is still there; the detail that is left is the newest.
  std::size_t steps = 0, kernels = 0;
  int64_t oldest_kernel = INT64_MAX;
  for (uint32_t part = 0; part < p->parts(); ++part) {
    const File f = read(d.path + "/" + format::trace_file_name("h", 42, part));
    EXPECT_EQ(f.header.process.part, part);
    EXPECT_EQ(f.header.records, f.records.size());
    steps += count(f, format::RecordKind::kStep);
    kernels += count(f, format::RecordKind::kKernel);
    for (const auto& r : f.records)
      if (r.prefix.kind == format::RecordKind::kKernel)
        oldest_kernel = std::min(oldest_kernel, r.call.t_enter_ns);
  }
  EXPECT_EQ(steps, 240u);
  EXPECT_EQ(kernels + evicted, 24'000u);
  // Each rewritten part counts what it lost; the segment says which part is written now.
  uint64_t counted = 0;
  for (uint32_t part = 0; part < p->parts(); ++part)
    counted +=
        read(d.path + "/" + format::trace_file_name("h", 42, part)).header.losses.detail_evicted;
  EXPECT_EQ(counted, evicted);
  EXPECT_EQ(seg.process.part, p->parts() - 1);
  EXPECT_GT(oldest_kernel, 0);  // the first batch's detail went
  for (const auto& e : fs::directory_iterator(d.path))
    EXPECT_EQ(e.path().extension(), ".trace") << e.path();  // no leftover of a rewrite
}

TEST(TraceParts, SummariesAlonePastTheBudgetAreKeptAndSaidOnce) {
  Dir d;
  format::SegmentHeader seg{};
  auto p = open_parts(d, 1 << 20, seg);
  std::vector<format::Record> rs(20'000, record(format::RecordKind::kStep, 0));
  ASSERT_TRUE(p->append(rs.data(), rs.size()));
  std::string line;
  EXPECT_EQ(p->enforce_budget(&line), 0u);
  EXPECT_NE(line.find("NCCLWATCH_MAX_MB"), std::string::npos) << line;
  std::string again;
  p->enforce_budget(&again);
  EXPECT_TRUE(again.empty());
  EXPECT_GE(p->bytes(), 20'000u * 64);
}

// A part replaced by someone else (a symlink planted at its name in a shared directory) is never
// followed or rewritten: one line, once, and the trace goes on.
TEST(TraceParts, APlantedPartIsNeitherFollowedNorRewritten) {
  Dir d;
  format::SegmentHeader seg{};
  auto p = open_parts(d, 1 << 20, seg);
  std::vector<format::Record> rs(3000, record(format::RecordKind::kKernel, 5));
  ASSERT_TRUE(p->append(rs.data(), rs.size()));
  ASSERT_GT(p->parts(), 1u);
  const std::string first = d.path + "/" + format::trace_file_name("h", 42, 0);
  const std::string target = d.path + "/elsewhere";
  { std::ofstream(target) << "not a trace"; }
  fs::remove(first);
  fs::create_symlink(target, first);
  std::string line, again;
  for (int i = 0; i < 10 && line.empty(); ++i) {
    ASSERT_TRUE(p->append(rs.data(), rs.size()));
    p->enforce_budget(&line);
  }
  EXPECT_NE(line.find("cannot remove old detail"), std::string::npos) << line;
  ASSERT_TRUE(p->append(rs.data(), rs.size()));
  p->enforce_budget(&again);
  EXPECT_EQ(again.find("cannot remove"), std::string::npos) << again;
  EXPECT_TRUE(fs::is_symlink(first));
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "not a trace");
}

}  // namespace
}  // namespace ncclwatch::shim

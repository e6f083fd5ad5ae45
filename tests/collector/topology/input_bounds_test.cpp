// What the parser does with inputs that are not plain log files of a sane size: a FIFO or a
// device is refused without blocking or reading, a line longer than the cap is cut, a log of a
// job hung in init (thousands of threads, none completing) parses in linear time.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "topology/log_parser.h"

namespace ncclwatch::topology {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "nw-topo-XXXXXX").string();
    dir_ = mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

std::string all_problems(const LogSet& set) {
  std::string s;
  for (const auto& p : set.problems) s += p.source + ": " + p.message + "\n";
  return s;
}

TEST(TopologyInputBounds, FifoAndDeviceAreRefusedWithoutReading) {
  TempDir tmp;
  ASSERT_EQ(mkfifo(tmp.path("fifo.log").c_str(), 0600), 0);
  LogParser parser;
  parser.add_file(tmp.path("fifo.log"));  // would block forever if opened for a plain read
  parser.add_file("/dev/zero");           // would fill memory if read to the end
  LogSet set = parser.take();
  ASSERT_EQ(set.problems.size(), 2u) << all_problems(set);
  for (const auto& p : set.problems)
    EXPECT_NE(p.message.find("not a regular file"), std::string::npos);
  EXPECT_EQ(set.stats.files, 0u);
}

TEST(TopologyInputBounds, OverlongLinesAreCutAndCounted) {
  TempDir tmp;
  {
    std::ofstream out(tmp.path("long.log"));
    out << "host:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0\n";
    out << std::string(LogParser::kMaxLineBytes * 3, 'x') << "\n";
    out << "host:1:2 [1] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1\n";
  }
  LogParser parser;
  parser.add_file(tmp.path("long.log"));
  LogSet set = parser.take();
  EXPECT_EQ(set.stats.lines, 3u);
  EXPECT_EQ(set.stats.nccl_lines, 2u);
  EXPECT_EQ(set.ranks.size(), 2u);
  ASSERT_EQ(set.problems.size(), 1u) << all_problems(set);
  EXPECT_EQ(set.problems[0].message, "1 line(s) longer than 64 KiB, cut there");
}

TEST(TopologyInputBounds, UnreadableFileIsOneProblem) {
  LogParser parser;
  parser.add_file("/nonexistent/ncclwatch/nccl.log");
  LogSet set = parser.take();
  ASSERT_EQ(set.problems.size(), 1u);
  EXPECT_NE(set.problems[0].message.find("cannot be read"), std::string::npos)
      << set.problems[0].message;
}

// 40,000 threads of one process each start an init with a comm of their own and hang; then the
// first 1,000 complete. Every init is its own record, and each completion closes only its own.
TEST(TopologyInputBounds, JobHungInInitWithManyThreads) {
  std::string text;
  constexpr int kThreads = 40000;
  for (int i = 0; i < kThreads; ++i) {
    text += "node0:100:" + std::to_string(200 + i) + " [0] NCCL INFO ncclCommInitRank comm 0x" +
            std::to_string(90000 + i) + " rank 0 nranks 2 cudaDev 0 busId 1000 - Init START\n";
  }
  for (int i = 0; i < 1000; ++i) {
    text += "node0:100:" + std::to_string(200 + i) + " [0] NCCL INFO comm 0x" +
            std::to_string(90000 + i) + " rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n";
  }
  LogParser parser;
  parser.add_text("hung.log", text);
  LogSet set = parser.take();
  ASSERT_EQ(set.ranks.size(), static_cast<std::size_t>(kThreads));
  std::size_t complete = 0;
  for (const auto& r : set.ranks) complete += r.complete;
  EXPECT_EQ(complete, 1000u);
  EXPECT_EQ(set.stats.used, static_cast<uint64_t>(kThreads + 1000));
}

}  // namespace
}  // namespace ncclwatch::topology

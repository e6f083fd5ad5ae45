#include "live/own_file.h"


#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "process.h"
#include "trace/segment_view.h"

namespace ncclwatch::live {
namespace {

namespace fs = std::filesystem;

class OwnFileTest : public ::testing::Test {
 protected:
  std::string touch(const std::string& name) {
    const std::string path = (root_ / name).string();
    std::ofstream(path) << "x";
    return path;
  }
  test_support::TempDir tmp_{"ncclwatch_own_file"};
  const fs::path& root_ = tmp_.path();
};

TEST_F(OwnFileTest, TraceFilesAreTheNcclwatchDotTraceNamesOnly) {
  const std::string a = touch("ncclwatch.n1.10.trace");
  const std::string b = touch("ncclwatch.n2.11.trace");
  touch("other.n1.12.trace");
  touch("ncclwatch.n1.13.log");
  std::set<std::string> paths;
  std::vector<std::string> notes;
  add_trace_files(root_.string(), paths, notes);
  EXPECT_EQ(paths, (std::set<std::string>{a, b}));
  EXPECT_TRUE(notes.empty());
}

TEST_F(OwnFileTest, AnUnreadableDirectoryIsANoteNotAnError) {
  std::set<std::string> paths;
  std::vector<std::string> notes;
  add_trace_files((root_ / "missing").string(), paths, notes);
  EXPECT_TRUE(paths.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("missing"), std::string::npos);
}

TEST_F(OwnFileTest, ASymlinkIsSkippedWithANote) {
  const std::string target = touch("real");
  const std::string link = (root_ / "ncclwatch.n1.10.trace").string();
  fs::create_symlink(target, link);
  std::vector<std::string> notes;
  EXPECT_TRUE(own_input(target, notes));
  EXPECT_TRUE(notes.empty());
  EXPECT_FALSE(own_input(link, notes));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], link + ": skipped: not a regular file (a symlink?)");
  EXPECT_FALSE(own_input((root_ / "gone").string(), notes));
  EXPECT_EQ(notes.back(), (root_ / "gone").string() + ": skipped: vanished");
}

TEST_F(OwnFileTest, ABrokenSegmentIsSkippedWithWhy) {
  touch("ncclwatch.j.n1.10");  // too short to be a segment
  trace::SegmentView view;
  std::vector<std::string> notes;
  EXPECT_FALSE(open_own_segment(view, root_.string(), "ncclwatch.j.n1.10", "", notes));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind((root_ / "ncclwatch.j.n1.10").string() + ": skipped: ", 0), 0u)
      << notes[0];
}

TEST(OfJob, EmptyJobMeansEveryJob) {
  format::ProcessInfo p{};
  std::strncpy(p.job, "train", sizeof p.job - 1);
  EXPECT_TRUE(of_job(p, ""));
  EXPECT_TRUE(of_job(p, "train"));
  EXPECT_FALSE(of_job(p, "other"));
}

}  // namespace
}  // namespace ncclwatch::live

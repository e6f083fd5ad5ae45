// Where the drain thread finds capture requests (record/capture_inbox.h): the segment's request
// once per id, the control file once per change and at most once a second, an earlier run's
// request ignored, a bad file said once and never followed.
#include "record/capture_inbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace ncclwatch::shim {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kStart = 1'700'000'000 * kS;  // the process's start, CLOCK_REALTIME

format::CaptureAsk ask(uint64_t id, int64_t requested) {
  format::CaptureAsk a;
  a.id = id;
  a.unit = format::kCaptureSteps;
  a.first = 100;
  a.count = 20;
  a.requested_realtime_ns = requested;
  return a;
}

class Inbox : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclwatch_inbox_XXXXXX";
    dir_ = mkdtemp(tmpl);
    fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    inbox_.open(dir_, "job", kStart);
  }
  void TearDown() override {
    ::close(fd_);
    fs::remove_all(dir_);
  }
  void write_file(const format::CaptureAsk& a) {
    std::string error;
    ASSERT_TRUE(format::write_control_file(fd_, "ncclwatch.job.capture", "t", a, &error)) << error;
  }
  std::string dir_;
  int fd_ = -1;
  CaptureInbox inbox_;
  format::CaptureRequest slot_{};
  int64_t now_ = 0;
  std::vector<format::CaptureAsk> poll(std::string* line = nullptr) {
    now_ += CaptureInbox::kFilePeriodNs;
    std::string ignored;
    return inbox_.poll(slot_, now_, line != nullptr ? line : &ignored);
  }
};

TEST_F(Inbox, SegmentRequestOncePerId) {
  EXPECT_TRUE(poll().empty());
  format::write_capture_request(slot_, ask(7, kStart + kS));
  auto got = poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, 7u);
  EXPECT_EQ(got[0].first, 100u);
  EXPECT_EQ(got[0].trigger, format::WindowTrigger::kOnDemand);
  EXPECT_TRUE(poll().empty());
  format::write_capture_request(slot_, ask(8, kStart - 3600 * kS));  // an earlier run's
  EXPECT_TRUE(poll().empty());
}

TEST_F(Inbox, ControlFileOncePerChangeAtMostOnceASecond) {
  write_file(ask(9, kStart + kS));
  auto got = poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, 9u);
  EXPECT_TRUE(poll().empty());  // unchanged
  write_file(ask(10, kStart + 2 * kS));
  // Within the second after a look: not looked at again.
  EXPECT_TRUE(inbox_.poll(slot_, now_ + 1, nullptr).empty());
  got = poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, 10u);
  write_file(ask(11, kStart - 3600 * kS));
  EXPECT_TRUE(poll().empty());
  // The largest time a file can say is no overflow (UBSan), just a request of this run.
  write_file(ask(12, INT64_MAX));
  EXPECT_EQ(poll().size(), 1u);
}

TEST_F(Inbox, BadControlFileIsSaidOnceAndNeverFollowed) {
  { std::ofstream(dir_ + "/target") << format::to_control_text(ask(12, kStart + kS)); }
  fs::create_symlink(dir_ + "/target", dir_ + "/ncclwatch.job.capture");
  std::string line;
  EXPECT_TRUE(poll(&line).empty());
  EXPECT_NE(line.find("ncclwatch: ignoring "), std::string::npos) << line;
  fs::remove(dir_ + "/ncclwatch.job.capture");
  { std::ofstream(dir_ + "/ncclwatch.job.capture") << "garbage\n"; }
  std::string again;
  EXPECT_TRUE(poll(&again).empty());
  EXPECT_TRUE(again.empty()) << again;  // said once per process
  write_file(ask(13, kStart + kS));     // a good one afterwards still works
  const auto got = poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, 13u);
}

}  // namespace
}  // namespace ncclwatch::shim

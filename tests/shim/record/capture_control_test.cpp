// How a capture request travels (ncclwatch/capture_control.h): the control file's text both ways,
// every malformed text refused with a reason, and the file refused unless it is this user's own
// regular file, not a symlink, not writable by others, at most 4 KiB.
#include "ncclwatch/capture_control.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace ncclwatch::format {
namespace {

namespace fs = std::filesystem;

CaptureAsk sample() {
  CaptureAsk a;
  a.id = 0x1234abcd;
  a.unit = kCaptureSteps;
  a.first = 1200;
  a.count = 20;
  a.trigger = WindowTrigger::kOnDemand;
  a.requested_realtime_ns = 1'700'000'000'000'000'000;
  a.text = "ncclwatch capture (asked by me@node1)\nsecond line";
  return a;
}

TEST(CaptureControl, TextRoundTrips) {
  const CaptureAsk a = sample();
  std::string error;
  const auto b = parse_control_text(to_control_text(a), &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->id, a.id);
  EXPECT_EQ(b->unit, a.unit);
  EXPECT_EQ(b->first, a.first);
  EXPECT_EQ(b->count, a.count);
  EXPECT_EQ(b->trigger, a.trigger);
  EXPECT_EQ(b->requested_realtime_ns, a.requested_realtime_ns);
  EXPECT_EQ(b->text, "ncclwatch capture (asked by me@node1) second line");  // one line
}

TEST(CaptureControl, MalformedTextIsRefusedWithAReason) {
  const std::string good = to_control_text(sample());
  const auto refused = [](const std::string& text) {
    std::string error;
    const bool parsed = parse_control_text(text, &error).has_value();
    return !parsed && !error.empty();
  };
  EXPECT_TRUE(refused(""));
  EXPECT_TRUE(refused("hello\n"));
  EXPECT_TRUE(refused(good.substr(0, good.size() - 1)));  // last line not ended
  EXPECT_TRUE(refused(std::string(5000, 'x')));
  for (const char* key : {"id=", "unit=", "count="}) {
    std::string t = good;
    const auto at = t.find(key);
    t.erase(at, t.find('\n', at) - at + 1);
    EXPECT_TRUE(refused(t)) << key;
  }
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"id=305441741", "id=0"},
                                                        {"id=305441741", "id=-3"},
                                                        {"unit=steps", "unit=minutes"},
                                                        {"count=20", "count=0"},
                                                        {"count=20", "count=2x"},
                                                        {"trigger=on-demand", "trigger=whole-run"},
                                                        {"trigger=on-demand", "trigger=whim"}}) {
    std::string t = good;
    ASSERT_NE(t.find(from), std::string::npos) << from;
    t.replace(t.find(from), from.size(), to);
    EXPECT_TRUE(refused(t)) << to;
  }
  // A newer writer's keys are ignored; control characters in the text are neutralized.
  std::string t = good + "future=1\n";
  t.replace(t.find("text="), 5, "text=\x1b[31m");
  std::string error;
  const auto a = parse_control_text(t, &error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->text.find('\x1b'), std::string::npos);
}

class ControlFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclwatch_control_XXXXXX";
    dir_ = mkdtemp(tmpl);
    fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  void TearDown() override {
    ::close(fd_);
    fs::remove_all(dir_);
  }
  std::string read_error(const std::string& name) {
    std::string error;
    EXPECT_FALSE(read_control_file(fd_, name, &error).has_value());
    return error;
  }
  std::string dir_;
  int fd_ = -1;
};

TEST_F(ControlFile, WrittenAtomicallyAndReadBack) {
  const std::string name = control_file_name("job-1");
  EXPECT_EQ(name, "ncclwatch.job-1.capture");
  EXPECT_EQ(read_error(name), "");  // missing: nothing to say
  std::string error;
  ASSERT_TRUE(write_control_file(fd_, name, "test", sample(), &error)) << error;
  const auto text = read_control_file(fd_, name, &error);
  ASSERT_TRUE(text) << error;
  const auto ask = parse_control_text(*text, &error);
  ASSERT_TRUE(ask) << error;
  EXPECT_EQ(ask->id, sample().id);
  struct stat st {};
  ASSERT_EQ(::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  for (const auto& e : fs::directory_iterator(dir_))  // no temporary left behind
    EXPECT_EQ(e.path().filename(), name);
}

TEST_F(ControlFile, UntrustworthyFilesAreRefused) {
  std::string error;
  ASSERT_TRUE(write_control_file(fd_, "real", "test", sample(), &error)) << error;
  fs::create_symlink(dir_ + "/real", dir_ + "/link");
  EXPECT_NE(read_error("link"), "");
  fs::create_hard_link(dir_ + "/real", dir_ + "/hard");
  EXPECT_NE(read_error("hard"), "");
  fs::remove(dir_ + "/hard");
  { std::ofstream(dir_ + "/open") << to_control_text(sample()); }
  ::chmod((dir_ + "/open").c_str(), 0666);
  EXPECT_NE(read_error("open"), "");
  { std::ofstream(dir_ + "/big") << std::string(5000, 'x'); }
  ::chmod((dir_ + "/big").c_str(), 0644);
  EXPECT_NE(read_error("big"), "");
  ::mkfifo((dir_ + "/fifo").c_str(), 0644);
  EXPECT_NE(read_error("fifo"), "");
  fs::create_directory(dir_ + "/dir");
  EXPECT_NE(read_error("dir"), "");
}

TEST(CaptureControl, SegmentRequestRoundTripsThroughTheSeqlock) {
  CaptureRequest slot{};
  CaptureRequest out{};
  ASSERT_TRUE(read_capture_request(slot, out));
  EXPECT_EQ(out.version, 0u);  // never written
  write_capture_request(slot, sample());
  ASSERT_TRUE(read_capture_request(slot, out));
  EXPECT_NE(out.version, 0u);
  EXPECT_EQ(out.version % 2, 0u);
  EXPECT_EQ(out.id, sample().id);
  EXPECT_EQ(out.first, 1200u);
  EXPECT_EQ(out.count, 20u);
  EXPECT_EQ(out.trigger, static_cast<uint32_t>(WindowTrigger::kOnDemand));
  slot.version = 7;  // a writer died while writing
  EXPECT_FALSE(read_capture_request(slot, out));
}

}  // namespace
}  // namespace ncclwatch::format

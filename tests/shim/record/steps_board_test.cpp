// The job's steps on the trace directory (ncclwatch/job_steps.h, record/steps_board.h): the
// notice's text is checked field by field; a published notice is seen by another rank's board at
// most once a second; an earlier run's notice is ignored; a bad file is said once and never
// followed.
#include "record/steps_board.h"

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
constexpr int64_t kStart = 1'700'000'000 * kS;  // the processes' start, CLOCK_REALTIME

format::JobSteps notice(int64_t published, uint32_t period = 4) {
  format::JobSteps s;
  s.comm = 0xfeedbeefcafe;
  s.period = period;
  s.phase = 1;
  s.start_token = 0x8000000000000001ull;
  s.published_realtime_ns = published;
  s.rank = 3;
  return s;
}

TEST(JobSteps, TextRoundTripsAndEveryFieldIsChecked) {
  const format::JobSteps s = notice(kStart + kS);
  std::string error;
  const auto back = format::parse_job_steps_text(format::to_job_steps_text(s), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(back->same_steps(s));
  EXPECT_EQ(back->published_realtime_ns, s.published_realtime_ns);
  EXPECT_EQ(back->rank, 3);

  const std::string good = format::to_job_steps_text(s);
  const auto refused = [&](std::string text, const char* why) {
    std::string e;
    EXPECT_FALSE(format::parse_job_steps_text(text, &e)) << why;
    EXPECT_NE(e.find(why), std::string::npos) << e;
  };
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  refused("ncclwatch-capture 1\n", "not an ncclwatch steps notice");
  refused(with("period=4", "period=0"), "bad period");
  refused(with("period=4", "period=99999999"), "bad period");
  refused(with("period=4", "period=4x"), "bad period");
  refused(with("comm=", "comm=0\nx="), "bad comm");
  refused(with("phase=1", "phase=4"), "phase not below period");
  refused(with("phase=1\n", ""), "missing");
  refused(with("published_realtime_ns=", "published_realtime_ns=-"), "bad published_realtime_ns");
  refused(good.substr(0, good.size() - 1), "last line not ended");
  refused(good + "no equals sign\n", "a line without '='");
  refused(good + std::string(5000, 'x') + "=\n", "larger than 4 KiB");
  EXPECT_TRUE(format::parse_job_steps_text(good + "newer_key=1\n", &error)) << error;
}

class Board : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclwatch_steps_XXXXXX";
    dir_ = mkdtemp(tmpl);
    teller_.open(dir_, "job", kStart);
    taker_.open(dir_, "job", kStart);
  }
  void TearDown() override { fs::remove_all(dir_); }
  const std::optional<format::JobSteps>& poll(std::string* line = nullptr) {
    now_ += StepsBoard::kFilePeriodNs;
    std::string ignored;
    return taker_.poll(now_, line != nullptr ? line : &ignored);
  }
  std::string dir_;
  StepsBoard teller_, taker_;
  int64_t now_ = 0;
};

TEST_F(Board, APublishedNoticeReachesAnotherRankAtMostOnceASecond) {
  ASSERT_TRUE(taker_.is_open());
  EXPECT_FALSE(poll());
  std::string line;
  ASSERT_TRUE(teller_.publish(notice(kStart + kS), "a", &line)) << line;
  EXPECT_TRUE(teller_.poll(0, &line));  // the teller knows what it told
  const auto got = poll();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->period, 4u);
  EXPECT_EQ(got->rank, 3);
  EXPECT_EQ(fs::status(dir_ + "/ncclwatch.job.steps").permissions() & fs::perms::others_write,
            fs::perms::none);
  ASSERT_TRUE(teller_.publish(notice(kStart + 2 * kS, 8), "a", &line)) << line;
  // Within the second after a look: not looked at again.
  EXPECT_EQ(taker_.poll(now_ + 1, nullptr)->period, 4u);
  EXPECT_EQ(poll()->period, 8u);
  // Gone: what it said stands for this run.
  fs::remove(dir_ + "/ncclwatch.job.steps");
  EXPECT_EQ(poll()->period, 8u);
}

TEST_F(Board, AnEarlierRunsNoticeIsIgnored) {
  std::string line;
  ASSERT_TRUE(teller_.publish(notice(kStart - 3600 * kS), "a", &line)) << line;
  EXPECT_FALSE(poll());
  // Within the hosts' clock slack: this run's.
  ASSERT_TRUE(teller_.publish(notice(kStart - StepsBoard::kClockSlackNs / 2), "a", &line));
  EXPECT_TRUE(poll());
  // The largest time a file can say is no overflow (UBSan), just a notice of this run.
  ASSERT_TRUE(teller_.publish(notice(INT64_MAX), "a", &line));
  EXPECT_EQ(poll()->published_realtime_ns, INT64_MAX);
}

TEST_F(Board, ABadFileIsSaidOnceAndNeverFollowed) {
  { std::ofstream(dir_ + "/target") << format::to_job_steps_text(notice(kStart + kS)); }
  fs::create_symlink(dir_ + "/target", dir_ + "/ncclwatch.job.steps");
  std::string line;
  EXPECT_FALSE(poll(&line));
  EXPECT_NE(line.find("ncclwatch: ignoring "), std::string::npos) << line;
  fs::remove(dir_ + "/ncclwatch.job.steps");
  { std::ofstream(dir_ + "/ncclwatch.job.steps") << "garbage\n"; }
  std::string again;
  EXPECT_FALSE(poll(&again));
  EXPECT_TRUE(again.empty()) << again;  // said once per process
  fs::permissions(dir_ + "/ncclwatch.job.steps", fs::perms::others_write, fs::perm_options::add);
  EXPECT_FALSE(poll(&again));
  std::string error;
  ASSERT_TRUE(teller_.publish(notice(kStart + kS), "a", &error)) << error;
  EXPECT_TRUE(poll());  // a good one afterwards still works
}

TEST_F(Board, WithoutTheDirectoryNothingIsToldOrTaken) {
  StepsBoard none;
  none.open(dir_ + "/missing", "job", kStart);
  EXPECT_FALSE(none.is_open());
  std::string line;
  EXPECT_FALSE(none.publish(notice(kStart + kS), "a", &line));
  EXPECT_FALSE(none.poll(kS, &line));
}

}  // namespace
}  // namespace ncclwatch::shim

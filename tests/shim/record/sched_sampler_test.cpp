// The drain thread's CPU-scheduling sampler (record/sched_sampler.h): parsing schedstat, which
// samples become records (a baseline, jumps with the sample before them, one per second of
// silence, the last one at exit), slots changing hands, unreadable threads; and the real
// /proc of this process.
#include "record/sched_sampler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "record/recorder.h"
#include "record/ring.h"

namespace ncclwatch::shim {
namespace {

constexpr int64_t kMs = 1'000'000;

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

TEST(ParseSchedstat, TheKernelsLine) {
  SchedReading r;
  const std::string line = "123456789 4242 17\n";
  ASSERT_TRUE(parse_schedstat(line.data(), line.size(), r));
  EXPECT_EQ(r.on_cpu_ns, 123456789u);
  EXPECT_EQ(r.wait_ns, 4242u);
  EXPECT_EQ(r.timeslices, 17u);
  ASSERT_TRUE(parse_schedstat("1 2 3", 5, r));  // no newline
  EXPECT_EQ(r.timeslices, 3u);
}

TEST(ParseSchedstat, AnythingElseIsRefused) {
  SchedReading r{7, 8, 9};
  for (const std::string bad : {"", "1 2", "1 2 x", "a 2 3", "1  2 3", "-1 2 3", "1,2,3",
                                "99999999999999999999999 1 1", "1 2 3x"}) {
    EXPECT_FALSE(parse_schedstat(bad.data(), bad.size(), r)) << bad;
  }
  EXPECT_EQ(r.on_cpu_ns, 7u);  // untouched
}

// A segment header and ring in memory, and a directory standing for /proc/self/task.
class SchedSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "sched_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::system(("rm -rf '" + dir_ + "'").c_str());
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
    header_->capacity = 256;
    ring_ = Ring(header_.get(), slots_.get());
    sampler_ = SchedSampler(header_.get(), &ring_, dir_.c_str());
  }
  void TearDown() override {
    sampler_.close_all();
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  void set_thread(std::size_t slot, uint32_t tid) { header_->in_flight[slot].owner_tid = tid; }
  void write_stat(uint32_t tid, uint64_t cpu, uint64_t wait, uint64_t slices) {
    const std::string d = dir_ + "/" + std::to_string(tid);
    mkdir(d.c_str(), 0700);
    std::ofstream(d + "/schedstat", std::ios::trunc) << cpu << " " << wait << " " << slices << "\n";
  }
  std::vector<format::SchedRecord> drain() {
    std::vector<format::SchedRecord> out;
    format::Record batch[256];
    const uint64_t n = ring_.peek(batch, 256);
    for (uint64_t i = 0; i < n; ++i) {
      EXPECT_EQ(batch[i].prefix.kind, format::RecordKind::kSched);
      out.push_back(batch[i].sched);
    }
    ring_.commit(n);
    return out;
  }

  std::string dir_;
  std::unique_ptr<format::RingSlot[]> slots_{new format::RingSlot[256]()};
  std::unique_ptr<format::SegmentHeader> header_{new format::SegmentHeader{}};
  Ring ring_;
  SchedSampler sampler_;
};

TEST_F(SchedSamplerTest, BaselineThenJumpsWithTheSampleBeforeThem) {
  set_thread(3, 4001);
  write_stat(4001, 1000, 500, 1);
  sampler_.sample(100 * kMs);
  auto recs = drain();
  ASSERT_EQ(recs.size(), 1u);  // the baseline
  EXPECT_EQ(recs[0].prefix.tid, 4001u);
  EXPECT_EQ(recs[0].t_ns, 100 * kMs);
  EXPECT_EQ(recs[0].wait_ns, 500u);
  EXPECT_EQ(recs[0].on_cpu_ns, 1000u);
  EXPECT_EQ(recs[0].timeslices, 1u);

  // Too early for the next sample: nothing read.
  write_stat(4001, 2000, 900'000, 2);
  sampler_.sample(100 * kMs + SchedSampler::kPeriodNs - 1);
  EXPECT_TRUE(drain().empty());

  // Small growth: remembered, not written.
  write_stat(4001, 3000, 500 + SchedSampler::kEmitWaitNs - 1, 3);
  sampler_.sample(200 * kMs);
  EXPECT_TRUE(drain().empty());
  // A jump: the sample before it, then the jump.
  write_stat(4001, 4000, 5'000'000, 4);
  sampler_.sample(220 * kMs);
  recs = drain();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].t_ns, 200 * kMs);
  EXPECT_EQ(recs[0].wait_ns, 500 + SchedSampler::kEmitWaitNs - 1);
  EXPECT_EQ(recs[1].t_ns, 220 * kMs);
  EXPECT_EQ(recs[1].wait_ns, 5'000'000u);
  // Steady contention: each sample is a jump of its own, one record each.
  write_stat(4001, 5000, 6'000'000, 5);
  sampler_.sample(240 * kMs);
  recs = drain();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].wait_ns, 6'000'000u);
  EXPECT_EQ(sampler_.written(), 4u);
}

TEST_F(SchedSamplerTest, OneRecordPerSecondWhenNothingWaitsAndTheLastAtExit) {
  set_thread(0, 77);
  write_stat(77, 1, 10, 1);
  sampler_.sample(0);
  ASSERT_EQ(drain().size(), 1u);
  for (int64_t t = 20; t < 1000; t += 20) sampler_.sample(t * kMs);
  EXPECT_TRUE(drain().empty());
  sampler_.sample(1000 * kMs);
  ASSERT_EQ(drain().size(), 1u);  // silence: no knee before it
  write_stat(77, 2, 20, 2);
  sampler_.sample(1005 * kMs, /*final=*/true);  // exit: whatever the period and the growth
  const auto recs = drain();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].t_ns, 1005 * kMs);
  EXPECT_EQ(recs[0].wait_ns, 20u);
}

TEST_F(SchedSamplerTest, ASlotChangingHandsIsANewThreadAndUnreadableThreadsAreLeftAlone) {
  set_thread(1, 10);
  set_thread(2, 11);  // no schedstat file: skipped, never retried
  write_stat(10, 1, 1, 1);
  sampler_.sample(0);
  auto recs = drain();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].prefix.tid, 10u);
  write_stat(11, 1, 1, 1);
  sampler_.sample(40 * kMs);
  EXPECT_TRUE(drain().empty());
  // Thread 10 exits, thread 12 takes its slot: a baseline of its own.
  set_thread(1, 12);
  write_stat(12, 5, 6, 7);
  sampler_.sample(80 * kMs);
  recs = drain();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].prefix.tid, 12u);
  EXPECT_EQ(recs[0].wait_ns, 6u);
  // A file that is not a schedstat line: that thread is dropped, not misread.
  set_thread(5, 13);
  {
    mkdir((dir_ + "/13").c_str(), 0700);
    std::ofstream(dir_ + "/13/schedstat") << "garbage\n";
  }
  sampler_.sample(120 * kMs, true);
  recs = drain();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].prefix.tid, 12u);
}

TEST_F(SchedSamplerTest, TheRealProcOfThisThread) {
  const uint32_t tid = thread_id();
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
  if (access(path.c_str(), R_OK) != 0) GTEST_SKIP() << path << " is not readable here";
  SchedSampler real(header_.get(), &ring_);
  set_thread(0, tid);
  real.sample(0);
  // Burn 20 ms of this thread's CPU time (however long a busy machine makes that take): the same
  // descriptor read again shows it (proc regenerates the line at offset 0).
  volatile uint64_t x = 0;
  const int64_t until = thread_cpu_ns() + 20 * kMs;
  while (thread_cpu_ns() < until) x = x + 1;
  real.sample(1, /*final=*/true);
  const auto recs = drain();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].prefix.tid, tid);
  EXPECT_GE(recs[1].on_cpu_ns, recs[0].on_cpu_ns + 10 * kMs);
  EXPECT_GE(recs[1].wait_ns, recs[0].wait_ns);
  EXPECT_GT(recs[1].timeslices, 0u);
}

}  // namespace
}  // namespace ncclwatch::shim

// The MPSC ring (record/ring.h) on an in-process segment: order, overflow, wraparound, holes,
// and producers racing a consumer (the last ones also run under TSan: label tsan).
#include "record/ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace ncclwatch::shim {
namespace {

struct LocalRing {
  explicit LocalRing(uint64_t capacity)
      : slots(new format::RingSlot[capacity]()), header(new format::SegmentHeader{}) {
    header->capacity = capacity;
    ring = Ring(header.get(), slots.get());
  }
  std::unique_ptr<format::RingSlot[]> slots;
  std::unique_ptr<format::SegmentHeader> header;
  Ring ring;
};

format::Record make(uint32_t producer, uint64_t i) {
  format::Record r{};
  r.call.prefix.kind = format::RecordKind::kCall;
  r.call.prefix.tid = producer;
  r.call.count = i;
  return r;
}

TEST(Ring, KeepsOrder) {
  LocalRing l(16);
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(l.ring.push(make(0, i)));
  format::Record out[16];
  ASSERT_EQ(l.ring.peek(out, 16), 10u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(out[i].call.count, i);
  l.ring.commit(10);
  EXPECT_EQ(l.ring.pending(), 0u);
  EXPECT_EQ(l.header->drained, 10u);
}

TEST(Ring, OverflowDropsAndCountsNothingElseLost) {
  LocalRing l(16);
  int accepted = 0;
  for (uint64_t i = 0; i < 40; ++i) accepted += l.ring.push(make(0, i)) ? 1 : 0;
  EXPECT_EQ(accepted, 16);
  EXPECT_EQ(l.header->dropped, 24u);
  format::Record out[16];
  ASSERT_EQ(l.ring.peek(out, 16), 16u);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ(out[i].call.count, i);  // the first 16, intact
  l.ring.commit(16);
  EXPECT_TRUE(l.ring.push(make(0, 99)));  // space again
}

TEST(Ring, WrapsAroundManyLaps) {
  LocalRing l(8);
  uint64_t next_in = 0, next_out = 0;
  format::Record out[8];
  for (int lap = 0; lap < 1000; ++lap) {
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(l.ring.push(make(0, next_in++)));
    uint64_t n = l.ring.peek(out, 8);
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i].call.count, next_out++);
    l.ring.commit(n);
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_EQ(l.header->dropped, 0u);
}

TEST(Ring, HoleFromDeadProducerIsSkippable) {
  LocalRing l(16);
  ASSERT_TRUE(l.ring.push(make(0, 0)));
  // A producer claims position 1 and dies before publishing.
  Ring::counter(l.header->write_pos).fetch_add(1);
  ASSERT_TRUE(l.ring.push(make(0, 2)));
  format::Record out[16];
  ASSERT_EQ(l.ring.peek(out, 16), 1u);  // stops at the hole
  l.ring.commit(1);
  EXPECT_TRUE(l.ring.hole_at_read());
  l.ring.skip_hole();
  ASSERT_EQ(l.ring.peek(out, 16), 1u);
  EXPECT_EQ(out[0].call.count, 2u);
}

TEST(RingConcurrency, ProducersAndConsumer) {
  constexpr int kProducers = 3;
  constexpr uint64_t kPerProducer = 20000;
  LocalRing l(256);
  std::atomic<int> done{0};
  std::vector<uint64_t> accepted(kProducers, 0);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (uint64_t i = 0; i < kPerProducer; ++i) {
        if (l.ring.push(make(static_cast<uint32_t>(p), i))) ++accepted[p];
      }
      done.fetch_add(1);
    });
  }
  std::vector<uint64_t> received(kProducers, 0);
  std::vector<int64_t> last(kProducers, -1);
  bool ordered = true;
  format::Record out[64];
  for (;;) {
    bool finished = done.load() == kProducers;
    uint64_t n = l.ring.peek(out, 64);
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t p = out[i].call.prefix.tid;
      ASSERT_LT(p, static_cast<uint32_t>(kProducers));
      ordered &= static_cast<int64_t>(out[i].call.count) > last[p];
      last[p] = static_cast<int64_t>(out[i].call.count);
      ++received[p];
    }
    l.ring.commit(n);
    if (n == 0 && finished && l.ring.pending() == 0) break;
    if (n == 0) std::this_thread::yield();
  }
  for (auto& t : producers) t.join();
  EXPECT_TRUE(ordered);
  uint64_t total_accepted = 0;
  for (int p = 0; p < kProducers; ++p) {
    EXPECT_EQ(received[p], accepted[p]);
    total_accepted += accepted[p];
  }
  EXPECT_EQ(total_accepted + l.header->dropped, kProducers * kPerProducer);
}

}  // namespace
}  // namespace ncclwatch::shim

// The whole recorder (segment + drain thread + trace file) fed by two threads at once.
#include <sys/stat.h>
#include <unistd.h>

#include "../support/trace_file.h"
#include "record/recorder.h"
#include "record/recorder_control.h"

namespace ncclwatch::shim {
namespace {

TEST(RingConcurrency, RecorderDrainsTwoProducers) {
  std::string dir = "/tmp/ncclwatch-ringtest-" + std::to_string(getpid());
  setenv("NCCLWATCH_DIR", dir.c_str(), 1);
  setenv("NCCLWATCH_JOB", ("ringtest-" + std::to_string(getpid())).c_str(), 1);
  setenv("NCCLWATCH_RING_MB", "0.05", 1);  // 512 slots: the drain must keep up, else drops
  ASSERT_TRUE(ensure_recorder());
  std::string path = current_trace_path();
  constexpr uint64_t kPerThread = 20000;
  std::atomic<uint64_t> accepted{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        if (emit(make(t, i))) accepted.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  finish_recorder();
  auto trace = testing::TraceFile::read(path);
  ASSERT_TRUE(trace.ok);
  EXPECT_EQ(trace.header.state, format::kTraceStateClosed);
  std::vector<int64_t> last(2, -1);
  uint64_t calls = 0;
  for (const auto& r : trace.records) {
    if (r.prefix.kind != format::RecordKind::kCall) continue;
    ++calls;
    ASSERT_LT(r.call.prefix.tid, 2u);
    EXPECT_GT(static_cast<int64_t>(r.call.count), last[r.call.prefix.tid]);
    last[r.call.prefix.tid] = static_cast<int64_t>(r.call.count);
  }
  EXPECT_EQ(calls, accepted.load());
  EXPECT_EQ(trace.header.records, trace.records.size());
  // Every call not accepted was counted as dropped; the drain's own clock anchors (one at close,
  // one per second) may have been dropped too when they found the ring full.
  EXPECT_GE(trace.header.dropped, 2 * kPerThread - accepted.load());
  EXPECT_LE(trace.header.dropped, 2 * kPerThread - accepted.load() + 3);
  unlink(path.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace ncclwatch::shim

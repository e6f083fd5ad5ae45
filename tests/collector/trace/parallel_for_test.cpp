// parallel_for: every index exactly once whatever the thread count, the first exception back
// to the caller after every thread has stopped, and one thread meaning the caller's own loop.
#include "trace/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ncclwatch::trace {
namespace {

TEST(ParallelFor, EveryIndexExactlyOnce) {
  for (unsigned threads : {1u, 2u, 3u, 16u}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1000}}) {
      std::vector<std::atomic<int>> hits(n);
      parallel_for(n, threads, [&](std::size_t i) { hits[i].fetch_add(1); });
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << threads << " " << i;
    }
  }
}

TEST(ParallelFor, OneThreadIsTheCallersLoopInOrder) {
  const auto caller = std::this_thread::get_id();
  std::vector<std::size_t> order;
  parallel_for(50, 1, [&](std::size_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  });
  ASSERT_EQ(order.size(), 50u);
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
}

TEST(ParallelFor, TheCallerWorksToo) {
  // With more items than threads and a body that waits for its peers, the caller must take
  // indices itself: 2 threads = the caller and one started thread.
  const auto caller = std::this_thread::get_id();
  std::atomic<int> on_caller{0}, started{0};
  parallel_for(2, 2, [&](std::size_t) {
    started.fetch_add(1);
    while (started.load() < 2) std::this_thread::yield();  // both run at once
    if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
  });
  EXPECT_EQ(on_caller.load(), 1);
}

TEST(ParallelFor, FirstExceptionReachesTheCallerAfterTheOthersStop) {
  for (unsigned threads : {1u, 4u}) {
    std::atomic<int> done{0};
    EXPECT_THROW(parallel_for(100, threads,
                              [&](std::size_t i) {
                                if (i == 10) throw std::runtime_error("bad input");
                                done.fetch_add(1);
                              }),
                 std::runtime_error);
    EXPECT_LT(done.load(), 100);
  }
}

TEST(ParallelFor, TicksWhileWaiting) {
  std::atomic<int> ticks{0};
  std::atomic<bool> ticked{false};
  parallel_for(
      1, 1,
      [&](std::size_t) {
        while (!ticked.load()) std::this_thread::yield();  // until the caller has ticked once
      },
      [&] {
        ticks.fetch_add(1);
        ticked.store(true);
      },
      std::chrono::milliseconds(1));
  EXPECT_GE(ticks.load(), 1);
}

}  // namespace
}  // namespace ncclwatch::trace

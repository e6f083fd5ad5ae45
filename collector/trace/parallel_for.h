// A minimal work-sharing loop: `threads` std::threads take indices from one atomic counter, so
// files of very different sizes still keep every thread busy. The calling thread only waits, and
// calls `tick` about every `tick_every` while it does (progress output).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace ncclwatch::trace {

template <typename Body, typename Tick>
void parallel_for(std::size_t n, unsigned threads, Body&& body, Tick&& tick,
                  std::chrono::milliseconds tick_every) {
  if (n == 0) return;
  const std::size_t workers = std::clamp<std::size_t>(threads, 1, n);
  std::atomic<std::size_t> next{0};
  std::size_t finished = 0;
  std::mutex mutex;
  std::condition_variable done;
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i);
      std::lock_guard lock(mutex);
      ++finished;
      done.notify_one();
    });
  }
  {
    std::unique_lock lock(mutex);
    while (!done.wait_for(lock, tick_every, [&] { return finished == workers; })) {
      lock.unlock();
      tick();
      lock.lock();
    }
  }
  for (auto& t : pool) t.join();
}

}  // namespace ncclwatch::trace

// A minimal work-sharing loop: `threads` std::threads take indices from one atomic counter, so
// files of very different sizes still keep every thread busy. The calling thread only waits, and
// calls `tick` about every `tick_every` while it does (progress output).
//
// An exception thrown by `body` (std::bad_alloc on an input larger than the memory limit, most
// often) must not escape a worker thread, where it would be std::terminate and a core dump: the
// first one is kept, the other workers stop taking indices, and it is rethrown to the caller
// once every thread has been joined. A thread that cannot be started is not fatal either: the
// threads already running (at worst the caller itself) do the work.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace ncclwatch::trace {

// How many workers a loop over independent items gets: `requested`, or one per core when 0 (an
// option left at its default). The one rule for the trace and Kineto loaders and the pipeline.
inline unsigned worker_count(unsigned requested = 0) {
  return requested != 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
}

namespace detail {

// The shared part of both loops: indices from one counter, the first exception kept.
template <typename Body>
struct IndexQueue {
  IndexQueue(std::size_t count, Body& fn) : n(count), body(fn) {}
  std::size_t n;
  Body& body;
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex mutex;

  void work() {
    try {
      for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i);
    } catch (...) {
      next.store(n);  // the others finish the index they hold and stop
      std::lock_guard lock(mutex);
      if (!failure) failure = std::current_exception();
    }
  }
};

// Starts up to `count` threads running `fn`; out of threads or memory for them: those started.
template <typename Fn>
std::vector<std::thread> start_threads(std::size_t count, Fn fn) {
  std::vector<std::thread> pool;
  try {
    pool.reserve(count);
    for (std::size_t w = 0; w < count; ++w) pool.emplace_back(fn);
  } catch (const std::exception&) {
  }
  return pool;
}

}  // namespace detail

template <typename Body, typename Tick>
void parallel_for(std::size_t n, unsigned threads, Body&& body, Tick&& tick,
                  std::chrono::milliseconds tick_every) {
  if (n == 0) return;
  detail::IndexQueue<Body> queue(n, body);
  std::size_t finished = 0;
  std::condition_variable done;
  std::vector<std::thread> pool =
      detail::start_threads(std::clamp<std::size_t>(threads, 1, n), [&] {
        queue.work();
        std::lock_guard lock(queue.mutex);
        ++finished;
        done.notify_one();
      });
  const std::size_t workers = pool.size();
  if (workers == 0) {
    queue.work();  // not even one thread: the caller does it all
  } else {
    std::unique_lock lock(queue.mutex);
    while (!done.wait_for(lock, tick_every, [&] { return finished == workers; })) {
      lock.unlock();
      tick();
      lock.lock();
    }
  }
  for (auto& t : pool) t.join();
  if (queue.failure) std::rethrow_exception(queue.failure);
}

// The same without progress ticks: the calling thread works too (threads - 1 are started), so
// one thread means no thread at all — the loop runs on the caller, in index order.
template <typename Body>
void parallel_for(std::size_t n, unsigned threads, Body&& body) {
  if (n == 0) return;
  const std::size_t wanted = std::clamp<std::size_t>(threads, 1, n);
  if (wanted == 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  detail::IndexQueue<Body> queue(n, body);
  std::vector<std::thread> pool = detail::start_threads(wanted - 1, [&] { queue.work(); });
  queue.work();
  for (auto& t : pool) t.join();
  if (queue.failure) std::rethrow_exception(queue.failure);
}

}  // namespace ncclwatch::trace

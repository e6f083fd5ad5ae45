// What the drain thread's CPU-scheduling sampler (record/sched_sampler.h) costs per sample: one
// pread of /proc/self/task/<tid>/schedstat per thread that calls NCCL, on descriptors kept open,
// plus the occasional record. Threads: 1, 4 and 16 live threads (sleeping on a condition
// variable) owning in-flight slots. Reported per sample (all threads) and per thread read; the
// drain thread samples every 20 ms, so 16 threads at 2 µs each would be 0.16 % of one core.
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "record/ring.h"
#include "record/sched_sampler.h"

namespace {

using ncclwatch::format::RingSlot;
using ncclwatch::format::SegmentHeader;
using ncclwatch::shim::Ring;
using ncclwatch::shim::SchedSampler;

// Threads that exist for the benchmark's length, each telling its tid.
class SleepingThreads {
 public:
  explicit SleepingThreads(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        std::unique_lock<std::mutex> lock(m_);
        tids_.push_back(static_cast<uint32_t>(syscall(SYS_gettid)));
        cv_.notify_all();
        cv_.wait(lock, [this] { return stop_; });
      });
    }
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return tids_.size() == n; });
  }
  ~SleepingThreads() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  const std::vector<uint32_t>& tids() const { return tids_; }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<uint32_t> tids_;
  std::vector<std::thread> threads_;
};

void BM_SchedSample(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  SleepingThreads threads(n);
  constexpr uint64_t kCapacity = 1024;
  std::unique_ptr<RingSlot[]> slots(new RingSlot[kCapacity]());
  std::unique_ptr<SegmentHeader> header(new SegmentHeader{});
  header->capacity = kCapacity;
  for (std::size_t i = 0; i < n; ++i) header->in_flight[i].owner_tid = threads.tids()[i];
  Ring ring(header.get(), slots.get());
  SchedSampler sampler(header.get(), &ring);
  ncclwatch::format::Record batch[kCapacity];
  int64_t now = 0;
  sampler.sample(now);  // opens the descriptors, writes the baselines
  for (auto _ : state) {
    now += SchedSampler::kPeriodNs;
    sampler.sample(now);
    if (ring.pending() > kCapacity / 2) ring.commit(ring.peek(batch, kCapacity));
  }
  ring.commit(ring.peek(batch, kCapacity));
  if (sampler.written() < n) state.SkipWithError("no /proc/self/task/<tid>/schedstat here");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));  // thread reads
  state.counters["records_per_sample"] = benchmark::Counter(
      static_cast<double>(sampler.written()) / static_cast<double>(state.iterations() + 1));
}

BENCHMARK(BM_SchedSample)
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->UseRealTime()
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();

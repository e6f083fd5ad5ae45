// The drain thread's look at how much CPU the threads that call NCCL got: a rank whose process
// waited for a CPU (other processes, its own DataLoader workers, an oversubscribed node) arrives
// late at its collectives, and the report can say so only if the trace holds the wait
// (format.h, SchedRecord).
//
// Which threads: the owners of the segment's in-flight slots — every thread that ever entered a
// hooked NCCL call. Their arrivals are what the straggler verdict measures (call entries, and the
// kernels they launch); the process total (/proc/self/schedstat is the main thread alone; the
// sum over /proc/self/task/* counts OpenMP, pin-memory and CUDA helper threads whose waiting
// delays nothing, and the drain thread itself) would measure something else and cost a directory
// scan per sample.
//
// Cost: one pread() per such thread per sample, on a file descriptor kept open from the first
// sample of that thread (proc's schedstat is regenerated at offset 0), every kPeriodNs at most:
// no allocation, no directory read (tests/bench/recorder/sched_bench.cpp measures it). Records:
// a thread's baseline, then one when its wait grew by kEmitWaitNs or kMaxSilenceNs passed (with
// the unwritten sample before a jump, so the wait lands in the right 20 ms): one a second on an
// idle machine, at most one per kPeriodNs under contention.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

class Ring;

// One reading of /proc/.../schedstat: "on_cpu_ns wait_ns timeslices\n".
struct SchedReading {
  uint64_t on_cpu_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t timeslices = 0;
};

// Parses the three numbers of a schedstat line; false on anything else.
bool parse_schedstat(const char* text, std::size_t size, SchedReading& out) noexcept;

class SchedSampler {
 public:
  static constexpr int64_t kPeriodNs = 20'000'000;
  static constexpr uint64_t kEmitWaitNs = 100'000;
  static constexpr int64_t kMaxSilenceNs = 1'000'000'000;

  SchedSampler() = default;
  // `task_dir`: where the threads' directories are (tests point it elsewhere); kept by pointer.
  SchedSampler(const format::SegmentHeader* header, Ring* ring,
               const char* task_dir = "/proc/self/task") noexcept
      : header_(header), ring_(ring), task_dir_(task_dir) {}
  SchedSampler(const SchedSampler&) = delete;
  SchedSampler& operator=(const SchedSampler&) = delete;
  SchedSampler& operator=(SchedSampler&& other) noexcept;
  ~SchedSampler() { close_all(); }

  // At host time `now`: samples every slot owner if kPeriodNs passed since the last sample (or
  // `final`: at exit, every thread's last reading is written whatever changed).
  void sample(int64_t now, bool final = false) noexcept;
  void close_all() noexcept;
  // Records written so far (tests, benchmarks).
  uint64_t written() const noexcept { return written_; }

 private:
  struct Thread {
    uint32_t tid = 0;
    int fd = -1;
    bool failed = false;    // cannot be read (no /proc, thread gone): not retried
    bool emitted = false;   // its baseline is written
    bool pending = false;   // `last` is a sample not written yet
    int64_t emitted_t = 0;  // time of the last record written
    uint64_t emitted_wait = 0;
    int64_t last_t = 0;
    SchedReading last;
  };
  void sample_thread(Thread& t, uint32_t owner, int64_t now, bool final) noexcept;
  bool read(Thread& t, SchedReading& out) noexcept;
  void write(const Thread& t, int64_t at, const SchedReading& r) noexcept;
  static void reset(Thread& t) noexcept;

  const format::SegmentHeader* header_ = nullptr;
  Ring* ring_ = nullptr;
  const char* task_dir_ = "/proc/self/task";
  int64_t next_sample_ns_ = 0;
  uint64_t written_ = 0;
  Thread threads_[format::kInFlightSlots];
};

}  // namespace ncclwatch::shim

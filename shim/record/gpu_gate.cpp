#include "record/gpu_gate.h"

#include <atomic>

namespace ncclwatch::shim {
namespace {

std::atomic<bool> g_wanted{true};
// A seqlock written by the CUPTI thread only: the serial is odd while it writes; a reader retries
// while it is odd or moved during its read.
std::atomic<bool> g_applied_on{true};
std::atomic<int64_t> g_applied_ns{0};
std::atomic<uint64_t> g_applied_serial{0};

}  // namespace

bool gpu_timing_wanted() noexcept {
  return g_wanted.load(std::memory_order_relaxed);
}

void set_gpu_timing_wanted(bool on) noexcept {
  g_wanted.store(on, std::memory_order_relaxed);
}

void publish_gpu_timing_applied(bool on, int64_t t_ns) noexcept {
  const uint64_t serial = g_applied_serial.load(std::memory_order_relaxed);
  g_applied_serial.store(serial + 1, std::memory_order_relaxed);  // odd while writing
  std::atomic_thread_fence(std::memory_order_release);
  g_applied_on.store(on, std::memory_order_relaxed);
  g_applied_ns.store(t_ns, std::memory_order_relaxed);
  g_applied_serial.store(serial + 2, std::memory_order_release);
}

GpuTimingApplied gpu_timing_applied() noexcept {
  GpuTimingApplied out;
  for (;;) {
    const uint64_t before = g_applied_serial.load(std::memory_order_acquire);
    out.on = g_applied_on.load(std::memory_order_relaxed);
    out.t_ns = g_applied_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1) == 0 && g_applied_serial.load(std::memory_order_relaxed) == before) {
      out.serial = before / 2;
      return out;
    }
  }
}

}  // namespace ncclwatch::shim

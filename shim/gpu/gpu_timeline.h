// Chooses and runs the shim's GPU timing mode, and is the CallObserver the NCCL wrappers call.
//
// When it starts: at the first NCCL call of a recording process (the observer is installed
// when libncclwatch.so loads; installing it costs nothing). CUDA is necessarily in use by then
// in a real rank, and a process that never calls NCCL never starts CUPTI. If no CUDA library is
// loaded yet, start is retried on later calls; the first collective or point-to-point call
// without CUDA settles it: host-only records, one warning.
//
// Mode (one `ncclwatch:` line on stderr says which and why):
//   full  (default)          CUPTI (cupti_tracer.h)
//   lite  NCCLWATCH_MODE=lite, or CUPTI cannot load/subscribe (busy, no driver): CUDA events
//   host  NCCLWATCH_MODE=host, or no CUDA at all: NCCL call records only
// Settings (settings.h, read at load): NCCLWATCH_MODE, NCCLWATCH_CUPTI, NCCLWATCH_CUDART,
// NCCLWATCH_KERNELS (kernel_filter.h), NCCLWATCH_CUPTI_CLOCK, NCCLWATCH_CUPTI_BUFFERS,
// NCCLWATCH_CUPTI_BUFFER_KB; NCCLWATCH_NVTX is applied at load (shim/nccl/load_time_setup.cpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "record/recorder.h"

namespace ncclwatch::shim::gpu {

enum class TimingMode : uint32_t { kHostOnly = 0, kFull = 1, kLite = 2 };

class GpuTimeline final : public CallObserver {
 public:
  static GpuTimeline& instance();

  void before_call(const InFlightCall& call) noexcept override;
  void after_call(const InFlightCall& call, int result) noexcept override;

  // Tries to start GPU timing now. `settle`: decide even if no CUDA is loaded (host-only).
  // Idempotent; returns true once a decision was made.
  bool start(bool settle) noexcept;
  // Flushes CUPTI / polls the last events and stops background threads (registered atexit).
  void shutdown() noexcept;
  bool decided() const noexcept { return state_.load(std::memory_order_acquire) == kDecided; }
  TimingMode mode() const noexcept { return mode_; }

 private:
  enum State : int { kUndecided = 0, kStarting = 1, kDecided = 2 };
  void decide(TimingMode mode) noexcept;
  bool check_capture(const InFlightCall& call) noexcept;  // true: stream is capturing

  std::atomic<int> state_{kUndecided};
  TimingMode mode_ = TimingMode::kHostOnly;
  bool have_capture_check_ = false;
};

}  // namespace ncclwatch::shim::gpu

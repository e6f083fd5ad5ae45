// Full mode: CUPTI activity tracing of kernels, memcpy, memset, NVTX markers and the driver's
// launch calls, plus a driver-API launch callback that ties each launch made inside an NCCL
// call to that call (KernelLinkRecord). One per process: CUPTI's callbacks are plain C
// functions, so the tracer is a singleton.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "activity_converter.h"
#include "buffer_pool.h"
#include "clock_converter.h"
#include "cupti_api.h"
#include "kernel_filter.h"

namespace ncclwatch::shim::gpu {

struct TracerOptions {
  std::size_t buffers = 16;            // NCCLWATCH_CUPTI_BUFFERS
  std::size_t buffer_bytes = 4 << 20;  // NCCLWATCH_CUPTI_BUFFER_KB * 1024
  KernelFilter filter;                 // NCCLWATCH_KERNELS
  bool measured_clock = false;         // skip the timestamp callback (bug range or env)
  int flush_period_ms = 1000;          // background non-forced flush, so live segments fill
};

class CuptiTracer {
 public:
  static CuptiTracer& instance();

  enum class StartResult { kStarted, kBusy, kFailed };
  // Takes ownership of a loaded CuptiApi. On kBusy/kFailed `why` says why; CUPTI is left
  // unsubscribed so lite mode can take over.
  StartResult start(CuptiApi api, const TracerOptions& options, std::string& why);
  // Forced flush of every buffer (at exit; also tests). Safe to call when not started.
  void flush() noexcept;
  void stop() noexcept;  // flush, stop the background thread (exit path)
  bool started() const noexcept { return started_.load(std::memory_order_acquire); }
  bool clock_measured() const noexcept { return clock_.measured(); }
  // GPU timing per window (record/gpu_gate.h): off disables the kernel, memcpy and memset
  // activity kinds and the launch callbacks (NVTX markers stay: steps may come from them), then
  // hands over what CUPTI holds (cuptiActivityFlushAll); on enables them again. Called by the
  // background thread when the gate changes (and by benchmarks); publishes what it applied.
  void switch_activity(bool on) noexcept;
  bool activity_on() const noexcept { return activity_on_.load(std::memory_order_relaxed); }
  ConverterStats stats();
  const std::string& cupti_path() const noexcept { return api_.path; }

 private:
  CuptiTracer() = default;
  CUptiResult subscribe_and_enable(bool with_timestamp_callback, std::string& why);
  void enable_callbacks(bool on) noexcept;
  void unsubscribe() noexcept;
  void background() noexcept;
  void recover_from_zero_timestamps() noexcept;

  static void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer,
                                           size_t size, size_t valid);
  static void CUPTIAPI on_api(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* cbdata);
  static uint64_t CUPTIAPI host_timestamp();

  CuptiApi api_;
  TracerOptions options_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::unique_ptr<BufferPool> pool_;
  ClockConverter clock_;
  std::unique_ptr<ActivityConverter> converter_;
  std::mutex convert_mutex_;  // CUPTI may complete buffers on its thread and a flushing one
  std::atomic<bool> started_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> zero_ts_seen_{false};
  std::atomic<bool> recovered_{false};
  std::atomic<bool> activity_on_{true};
  std::mutex switch_mutex_;  // the background thread and a benchmark's direct calls
  std::thread thread_;
};

}  // namespace ncclwatch::shim::gpu

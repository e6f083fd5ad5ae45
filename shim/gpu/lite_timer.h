// Lite mode: the GPU interval of each collective (or whole group) from a pair of CUDA events
// recorded around it on its stream. No CUPTI, no compute timeline; a few hundred ns per call.
//
// Events come from a pool created at start. The application thread only claims a slot and
// records two events (lock-free); a background thread polls completed slots in order,
// converts them to the host clock against a reference event whose host time was measured
// (cudaEventSynchronize bracketed by now_ns) and emits CollGpuRecords.
//
// Limits (documented, not hidden): calls on a device other than the one current at start are
// not timed; a non-blocking communicator returning ncclInProgress may launch after the end
// event (its interval is then too short); calls on a capturing stream are not timed (recording
// an event would change the user's graph).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "cudart_api.h"
#include "record/recorder.h"

namespace ncclwatch::shim::gpu {

class LiteTimer {
 public:
  static constexpr std::size_t kSlots = 1024;  // calls in flight on the GPU at once
  static constexpr int kMaxGroupStreams = 8;

  // Creates the events and the reference; false (with why) if the runtime refuses.
  bool start(const CudartApi& cudart, std::string& why);
  void stop() noexcept;  // final poll (bounded wait) and join; exit path

  void before_call(const InFlightCall& call) noexcept;
  void after_call(const InFlightCall& call, int result) noexcept;
  // A call left untimed on purpose (GPU timing switched off outside windows): forgets what this
  // thread armed or gathered for a group, so a later group does not time its streams.
  void skip_call(const InFlightCall& call) noexcept;

  // Processes every completed slot now (tests, exit). Returns records emitted.
  std::size_t poll() noexcept;
  uint64_t skipped() const noexcept { return skipped_.load(std::memory_order_relaxed); }

 private:
  enum State : uint32_t { kFree = 0, kArmed = 1, kPending = 2, kDiscard = 3 };
  struct Slot {
    std::atomic<uint32_t> state{kFree};
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    uint64_t comm_id = 0;
    uint64_t stream = 0;
    uint32_t seq = 0;
    uint32_t group_id = 0;
    format::Func func = format::Func::kUnknown;
  };
  Slot* arm(const InFlightCall& call, uint64_t stream, format::Func func) noexcept;
  bool anchor() noexcept;
  void loop() noexcept;

  CudartApi cudart_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> head_{0};  // next slot to claim (app threads)
  std::atomic<uint64_t> tail_{0};  // next slot to poll (poll thread / exit only)
  cudaEvent_t reference_ = nullptr;
  cudaStream_t anchor_stream_ = nullptr;
  int64_t reference_ns_ = 0;
  int64_t anchored_at_ns_ = 0;
  int device_ = 0;
  std::atomic<uint64_t> skipped_{0};
  // One call or group left untimed: counted here (tests) and in the trace header (the report).
  void count_untimed() noexcept {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    add_loss(&format::LossCounts::lite_untimed);
  }
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace ncclwatch::shim::gpu

#include "lite_timer.h"

#include <chrono>

namespace ncclwatch::shim::gpu {
namespace {

// The slots this thread armed for the call it is inside, and the streams of the calls it
// issued inside the current group (timed as one interval per stream at ncclGroupEnd).
struct ThreadState {
  void* armed[LiteTimer::kMaxGroupStreams];
  int n_armed;
  uint64_t group_streams[LiteTimer::kMaxGroupStreams];
  int n_group_streams;
};
thread_local ThreadState tls{};

}  // namespace

bool LiteTimer::start(const CudartApi& cudart, std::string& why) {
  cudart_ = cudart;
  if (cudart_.GetDevice(&device_) != cudaSuccess) {
    cudart_.GetLastError();
    why = "cudaGetDevice failed (no usable GPU?)";
    return false;
  }
  slots_.reset(new Slot[kSlots]);
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (cudart_.EventCreateWithFlags(&slots_[i].start, cudaEventDefault) != cudaSuccess ||
        cudart_.EventCreateWithFlags(&slots_[i].end, cudaEventDefault) != cudaSuccess) {
      cudart_.GetLastError();
      why = "cudaEventCreate failed";
      return false;
    }
  }
  if (cudart_.EventCreateWithFlags(&reference_, cudaEventDefault) != cudaSuccess ||
      cudart_.StreamCreateWithFlags(&anchor_stream_, cudaStreamNonBlocking) != cudaSuccess ||
      !anchor()) {
    cudart_.GetLastError();
    why = "cannot anchor a CUDA event to the host clock";
    return false;
  }
  thread_ = std::thread([this] { loop(); });
  return true;
}

// Host time of a fresh reference event: recorded on an idle stream of our own, so it completes
// between the two host reads; the midpoint errs by at most half the bracket. A preempted host
// widens the bracket, so it is retried a few times until the bracket is narrow; the event always
// holds the last try, whose midpoint is kept.
bool LiteTimer::anchor() noexcept {
  constexpr int kTries = 8;
  constexpr int64_t kNarrowNs = 20'000;
  for (int i = 0; i < kTries; ++i) {
    const int64_t before = now_ns();
    if (cudart_.EventRecord(reference_, anchor_stream_) != cudaSuccess) return false;
    if (cudart_.EventSynchronize(reference_) != cudaSuccess) return false;
    const int64_t after = now_ns();
    reference_ns_ = before + (after - before) / 2;
    anchored_at_ns_ = after;
    if (after - before <= kNarrowNs) break;
  }
  return true;
}

LiteTimer::Slot* LiteTimer::arm(const InFlightCall& call, uint64_t stream,
                                format::Func func) noexcept {
  uint64_t pos = head_.load(std::memory_order_relaxed);
  do {
    if (pos - tail_.load(std::memory_order_acquire) >= kSlots) {
      count_untimed();
      return nullptr;
    }
  } while (!head_.compare_exchange_weak(pos, pos + 1, std::memory_order_acq_rel));
  Slot& s = slots_[pos % kSlots];
  s.comm_id = func == format::Func::kGroupEnd ? 0 : call.comm_id;
  s.stream = stream;
  s.seq = call.seq;
  s.group_id = call.group_id;
  s.func = func;
  if (cudart_.EventRecord(s.start, reinterpret_cast<cudaStream_t>(stream)) != cudaSuccess) {
    cudart_.GetLastError();  // ours, not the application's: do not leave it sticky
    s.state.store(kDiscard, std::memory_order_release);
    count_untimed();
    return nullptr;
  }
  s.state.store(kArmed, std::memory_order_release);
  return &s;
}

void LiteTimer::before_call(const InFlightCall& call) noexcept {
  if (!slots_) return;
  tls.n_armed = 0;
  if (format::is_collective(call.func) || format::is_p2p(call.func)) {
    if (call.group_depth > 0) {
      // Inside a group the kernel is launched at ncclGroupEnd: remember the stream only.
      for (int i = 0; i < tls.n_group_streams; ++i) {
        if (tls.group_streams[i] == call.stream) return;
      }
      if (tls.n_group_streams < kMaxGroupStreams)
        tls.group_streams[tls.n_group_streams++] = call.stream;
      return;
    }
    if (Slot* s = arm(call, call.stream, call.func)) tls.armed[tls.n_armed++] = s;
  } else if (call.func == format::Func::kGroupEnd && call.group_depth <= 1) {
    for (int i = 0; i < tls.n_group_streams; ++i) {
      if (Slot* s = arm(call, tls.group_streams[i], format::Func::kGroupEnd))
        tls.armed[tls.n_armed++] = s;
    }
    tls.n_group_streams = 0;
  }
}

void LiteTimer::skip_call(const InFlightCall& call) noexcept {
  tls.n_armed = 0;
  if (call.func == format::Func::kGroupEnd && call.group_depth <= 1) tls.n_group_streams = 0;
}

void LiteTimer::after_call(const InFlightCall&, int result) noexcept {
  // ncclSuccess (0) or ncclInProgress (7): the work is (being) enqueued.
  // A failed call enqueued nothing: no GPU time to lose. A call that worked and whose end event
  // could not be recorded is untimed, and counted.
  const bool enqueued = result == 0 || result == 7;
  for (int i = 0; i < tls.n_armed; ++i) {
    Slot* s = static_cast<Slot*>(tls.armed[i]);
    bool ok = enqueued;
    if (ok &&
        cudart_.EventRecord(s->end, reinterpret_cast<cudaStream_t>(s->stream)) != cudaSuccess) {
      cudart_.GetLastError();
      count_untimed();
      ok = false;
    }
    s->state.store(ok ? kPending : kDiscard, std::memory_order_release);
  }
  tls.n_armed = 0;
}

std::size_t LiteTimer::poll() noexcept {
  std::size_t emitted = 0;
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  while (tail < head_.load(std::memory_order_acquire)) {
    Slot& s = slots_[tail % kSlots];
    uint32_t state = s.state.load(std::memory_order_acquire);
    if (state == kArmed || state == kFree) break;  // still inside the call
    if (state == kPending) {
      cudaError_t q = cudart_.EventQuery(s.end);
      if (q == cudaErrorNotReady) break;
      float ms_start = 0, ms_end = 0;
      if (q == cudaSuccess &&
          cudart_.EventElapsedTime(&ms_start, reference_, s.start) == cudaSuccess &&
          cudart_.EventElapsedTime(&ms_end, reference_, s.end) == cudaSuccess) {
        format::Record r{};
        auto& c = r.coll_gpu;
        c.prefix.kind = format::RecordKind::kCollGpu;
        c.prefix.u8a = static_cast<uint8_t>(s.func);
        c.prefix.u8b = static_cast<uint8_t>(device_);
        c.prefix.tid = thread_id();
        c.start_ns = reference_ns_ + static_cast<int64_t>(static_cast<double>(ms_start) * 1e6);
        c.end_ns = reference_ns_ + static_cast<int64_t>(static_cast<double>(ms_end) * 1e6);
        c.comm_id = s.comm_id;
        c.stream = s.stream;
        c.seq = s.seq;
        c.group_id = s.group_id;
        emit(r);
        ++emitted;
      } else {
        cudart_.GetLastError();
        count_untimed();
      }
    }
    s.state.store(kFree, std::memory_order_release);
    tail_.store(++tail, std::memory_order_release);
  }
  // cudaEventElapsedTime is a float of ms: re-anchor while idle so precision stays ~1 us.
  if (tail == head_.load(std::memory_order_acquire) &&
      now_ns() - anchored_at_ns_ > 30'000'000'000) {
    if (!anchor()) cudart_.GetLastError();
  }
  return emitted;
}

void LiteTimer::loop() noexcept {
  while (!stopping_.load(std::memory_order_acquire)) {
    poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void LiteTimer::stop() noexcept {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  thread_.join();
  // Give collectives still on the GPU a bounded moment to finish (the app usually synced).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (tail_.load() < head_.load() && std::chrono::steady_clock::now() < deadline) {
    poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace ncclwatch::shim::gpu

#include "gpu_timeline.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cudart_api.h"
#include "cupti_tracer.h"
#include "library_finder.h"
#include "lite_timer.h"
#include "record/gpu_gate.h"
#include "record/settings.h"

namespace ncclwatch::shim::gpu {
namespace {

CudartApi& cudart() {
  static CudartApi* api = new CudartApi();
  return *api;
}
LiteTimer& lite() {
  static LiteTimer* timer = new LiteTimer();  // never destroyed: threads may outlive statics
  return *timer;
}

static_assert(BufferPool::kMaxBuffers == kMaxCuptiBuffers, "NCCLWATCH_CUPTI_BUFFERS' upper bound");

// CUDA 12.6 update 2 up to 13.0 can return zero GPU timestamps when a timestamp callback is
// registered; cudaRuntimeGetVersion cannot tell updates apart, so all of 12.6..13.0 use the
// measured clock (correct everywhere, just an extra offset read per buffer).
bool timestamp_callback_is_risky(const CudartApi& rt) {
  int v = 0;
  if (rt.RuntimeGetVersion == nullptr || rt.RuntimeGetVersion(&v) != cudaSuccess) return false;
  return v >= 12060 && v <= 13000;
}

void at_exit() {
  GpuTimeline::instance().shutdown();
}

__attribute__((constructor)) void install_observer() {
  set_call_observer(&GpuTimeline::instance());
}

}  // namespace

GpuTimeline& GpuTimeline::instance() {
  static GpuTimeline* timeline = new GpuTimeline();
  return *timeline;
}

void GpuTimeline::decide(TimingMode mode) noexcept {
  mode_ = mode;
  set_timing_mode(static_cast<uint32_t>(mode));
  std::atexit(at_exit);  // after ensure_recorder(): runs before the recorder's own exit flush
  state_.store(kDecided, std::memory_order_release);
}

bool GpuTimeline::start(bool settle) noexcept {
  int expected = kUndecided;
  if (!state_.compare_exchange_strong(expected, kStarting, std::memory_order_acq_rel)) {
    return expected == kDecided;
  }
  if (!ensure_recorder()) {
    state_.store(kDecided, std::memory_order_release);  // recording off: nothing to time
    return true;
  }
  const Settings& config = settings();
  if (config.mode == GpuMode::kHost) {
    std::fprintf(stderr, "ncclwatch: GPU timing off (%s=host): NCCL call records only\n",
                 settings::name(settings::Id::kMode));
    decide(TimingMode::kHostOnly);
    return true;
  }
  if (!process_uses_cuda()) {
    if (!settle) {
      state_.store(kUndecided, std::memory_order_release);  // CUDA may come later (comm init)
      return false;
    }
    std::fprintf(stderr,
                 "ncclwatch: no CUDA library in this process: host-only records (no GPU timing)\n");
    decide(TimingMode::kHostOnly);
    return true;
  }
  std::string why_cudart;
  bool have_cudart = cudart().load(why_cudart);
  have_capture_check_ = have_cudart;

  std::string reason;
  if (config.mode != GpuMode::kLite) {
    TracerOptions options;
    options.buffers = config.cupti_buffers;
    options.buffer_bytes = config.cupti_buffer_kb * 1024;
    options.filter = KernelFilter(config.kernels, config.kernels_every);
    options.measured_clock = config.cupti_clock == CuptiClockChoice::kMeasured ||
                             (config.cupti_clock == CuptiClockChoice::kAuto && have_cudart &&
                              timestamp_callback_is_risky(cudart()));
    CuptiApi api;
    std::string why;
    if (!api.load(why)) {
      reason = "CUPTI cannot be loaded (" + why + ")";
    } else {
      auto result = CuptiTracer::instance().start(std::move(api), options, why);
      if (result == CuptiTracer::StartResult::kStarted) {
        auto& t = CuptiTracer::instance();
        std::fprintf(stderr, "ncclwatch: GPU timing: full (CUPTI %s, %s clock)\n",
                     t.cupti_path().c_str(), t.clock_measured() ? "measured" : "callback");
        // The trace says which compute kernels were left out on purpose (the collector judges
        // utilization and overlap only where compute was recorded).
        const KernelFilter& f = options.filter;
        set_kernel_filter(f.policy() == KernelPolicy::kNccl
                              ? format::kernel_filter_code(format::kKernelFilterNccl, 0)
                          : f.policy() == KernelPolicy::kSampled
                              ? format::kernel_filter_code(format::kKernelFilterSampled, f.every())
                              : 0);
        decide(TimingMode::kFull);
        return true;
      }
      reason = result == CuptiTracer::StartResult::kBusy
                   ? "CUPTI is busy: another subscriber holds it (nsys, torch.profiler?)"
                   : "CUPTI cannot be used (" + why + ")";
    }
  } else {
    reason = std::string(settings::name(settings::Id::kMode)) + "=lite";
  }
  std::string why_lite = why_cudart;
  if (have_cudart && lite().start(cudart(), why_lite)) {
    std::fprintf(stderr, "ncclwatch: GPU timing: lite (CUDA events; %s)\n", reason.c_str());
    decide(TimingMode::kLite);
    return true;
  }
  std::fprintf(stderr, "ncclwatch: no GPU timing: host-only records (%s; lite mode: %s)\n",
               reason.c_str(), why_lite.c_str());
  decide(TimingMode::kHostOnly);
  return true;
}

// A call on a capturing stream runs when the graph is replayed, not now: mark it (a link record
// with correlation 0 and kCallGraphCaptured) so the collector does not look for a kernel now.
bool GpuTimeline::check_capture(const InFlightCall& call) noexcept {
  if (!have_capture_check_ || call.stream == 0)
    return false;  // legacy stream: querying it can break capture
  if (!format::is_collective(call.func) && !format::is_p2p(call.func)) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudart().StreamIsCapturing(reinterpret_cast<cudaStream_t>(call.stream), &status) !=
      cudaSuccess) {
    cudart().GetLastError();
    return false;
  }
  if (status != cudaStreamCaptureStatusActive) return false;
  format::Record r{};
  auto& link = r.link;
  link.prefix.kind = format::RecordKind::kKernelLink;
  link.prefix.flags = format::kCallGraphCaptured;
  link.prefix.u8a = static_cast<uint8_t>(call.func);
  link.prefix.tid = thread_id();
  link.t_ns = now_ns();
  link.comm_id = call.comm_id;
  link.stream = call.stream;
  link.seq = call.seq;
  link.group_id = call.group_id;
  emit(r);
  return true;
}

void GpuTimeline::before_call(const InFlightCall& call) noexcept {
  if (state_.load(std::memory_order_acquire) != kDecided) {
    bool settle = format::is_collective(call.func) || format::is_p2p(call.func) ||
                  call.func == format::Func::kGroupEnd;
    if (!start(settle)) return;
  }
  if (mode_ == TimingMode::kHostOnly) return;
  bool captured = check_capture(call);
  if (mode_ != TimingMode::kLite || captured) return;
  // GPU timing per window (record/gpu_gate.h): one relaxed load.
  if (gpu_timing_wanted()) {
    lite().before_call(call);
  } else {
    lite().skip_call(call);
  }
}

void GpuTimeline::after_call(const InFlightCall& call, int result) noexcept {
  if (decided() && mode_ == TimingMode::kLite) lite().after_call(call, result);
}

void GpuTimeline::shutdown() noexcept {
  if (!decided()) return;
  if (mode_ == TimingMode::kFull) CuptiTracer::instance().stop();
  if (mode_ == TimingMode::kLite) lite().stop();
}

}  // namespace ncclwatch::shim::gpu

#include "cupti_tracer.h"

#include <cuda.h>
#include <cupti.h>  // brings generated_cuda_meta.h (launch parameter structs) with its prerequisites
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "record/gpu_gate.h"
#include "record/recorder.h"

namespace ncclwatch::shim::gpu {
namespace {

// The driver entry points every kernel launch goes through: NCCL >= 2.22 calls cuLaunchKernelEx
// through a pointer it fetched itself, the runtime's cudaLaunchKernel lands in cuLaunchKernel.
constexpr CUpti_CallbackId kLaunchCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

// The runtime's launch functions. CUPTI gives no DRIVER activity record for the driver call a
// runtime function makes inside itself, and asking for their RUNTIME records one by one
// (cuptiActivityEnableRuntimeApi) gave none either: on an H200 (CUDA 13.0's CUPTI, PyTorch 2.11)
// 16,382 compute kernels came with zero launch records. The runtime-domain callbacks do fire
// for the application's own calls, so the host side of those launches is written from them
// (`__cudaLaunchKernel` is what nvcc 13's <<<...>>> stubs call). NCCL launches through a driver
// pointer it fetched itself, so its kernels keep the driver records above.
constexpr CUpti_CallbackId kRuntimeLaunchCbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};

// The stream of a runtime launch, 0 where the parameters are unknown (the _ptsz variants take
// the same arguments as their plain forms).
uint64_t runtime_launch_stream(CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return 0;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      return reinterpret_cast<uint64_t>(
          static_cast<const cudaLaunchKernel_v7000_params*>(params)->stream);
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const cudaLaunchConfig_t* c =
          static_cast<const cudaLaunchKernelExC_v11060_params*>(params)->config;
      return c ? reinterpret_cast<uint64_t>(c->stream) : 0;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
      return reinterpret_cast<uint64_t>(
          static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(params)->stream);
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
      return reinterpret_cast<uint64_t>(
          static_cast<const cudaGraphLaunch_v10000_params*>(params)->stream);
    default:
      return 0;
  }
}

// When this thread entered the runtime launch it is inside (0: none), and the direct driver
// launch (0: none, or the driver call a runtime launch makes inside itself). Launches do not nest.
thread_local int64_t t_runtime_launch_enter = 0;
thread_local int64_t t_driver_launch_enter = 0;

// Whether launches get their LaunchRecord (NCCLWATCH_KERNELS=all): set before subscribing.
std::atomic<bool> g_launch_records{false};

void emit_launch(format::LaunchApi api, int64_t enter, int64_t exit, uint64_t stream,
                 uint32_t correlation) {
  format::Record r{};
  auto& l = r.launch;
  l.prefix.kind = format::RecordKind::kLaunch;
  l.prefix.u8a = static_cast<uint8_t>(api);
  l.prefix.tid = thread_id();
  l.t_enter_ns = enter != 0 ? enter : exit;
  l.t_exit_ns = exit;
  l.stream = stream;
  l.correlation = correlation;
  emit(r);
}

// Runs on the application's thread inside its launch call: hot-path rules (one record, written
// at the call's exit with both times).
void record_runtime_launch(CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const int64_t now = now_ns();
  if (cb.callbackSite == CUPTI_API_ENTER) {
    t_runtime_launch_enter = now;
    return;
  }
  const bool graph = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
                     cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
  emit_launch(graph ? format::LaunchApi::kRuntimeGraph : format::LaunchApi::kRuntimeKernel,
              t_runtime_launch_enter, now, runtime_launch_stream(cbid, cb.functionParams),
              cb.correlationId);
  t_runtime_launch_enter = 0;
}

uint64_t launch_stream(CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      return reinterpret_cast<uint64_t>(static_cast<const cuLaunchKernel_params*>(params)->hStream);
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const CUlaunchConfig* config = static_cast<const cuLaunchKernelEx_params*>(params)->config;
      return config ? reinterpret_cast<uint64_t>(config->hStream) : 0;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return reinterpret_cast<uint64_t>(
          static_cast<const cuLaunchCooperativeKernel_params*>(params)->hStream);
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return reinterpret_cast<uint64_t>(static_cast<const cuGraphLaunch_params*>(params)->hStream);
    default:
      return 0;
  }
}

}  // namespace

CuptiTracer& CuptiTracer::instance() {
  static CuptiTracer* tracer = new CuptiTracer();  // never destroyed: CUPTI may call back late
  return *tracer;
}

uint64_t CUPTIAPI CuptiTracer::host_timestamp() {
  return static_cast<uint64_t>(now_ns());
}

// Runs on the launching thread (an application thread, or NCCL's own for non-blocking comms),
// inside the driver call: hot-path rules.
void CUPTIAPI CuptiTracer::on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                  const void* data) {
  if (data == nullptr) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    record_runtime_launch(cbid, *cb);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  if (cb->callbackSite != CUPTI_API_ENTER) {
    // A direct driver launch (cuBLASLt's kernels, NCCL's): its host side, written at its exit.
    // CUPTI gave no DRIVER activity record for these either (3,150 cuBLASLt launches, none).
    if (t_driver_launch_enter != 0) {
      const bool graph = cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
      emit_launch(graph ? format::LaunchApi::kDriverGraph : format::LaunchApi::kDriverKernel,
                  t_driver_launch_enter, now_ns(), launch_stream(cbid, cb->functionParams),
                  cb->correlationId);
      t_driver_launch_enter = 0;
    }
    return;
  }
  // Not the driver call a runtime launch makes inside itself: that one has its runtime record.
  if (t_runtime_launch_enter == 0 && g_launch_records.load(std::memory_order_relaxed))
    t_driver_launch_enter = now_ns();
  const InFlightCall& call = in_flight_call();
  format::Record r{};
  auto& link = r.link;
  link.prefix.kind = format::RecordKind::kKernelLink;
  link.prefix.tid = thread_id();
  link.t_ns = now_ns();
  link.correlation = cb->correlationId;
  link.stream = launch_stream(cbid, cb->functionParams);
  if (call.active) {
    link.prefix.u8a = static_cast<uint8_t>(call.func);
    link.comm_id = call.func == format::Func::kGroupEnd ? 0 : call.comm_id;
    link.seq = call.seq;
    link.group_id = call.group_id;
    if (link.stream == 0) link.stream = call.stream;
  } else if (is_nccl_kernel_name(cb->symbolName)) {
    // An NCCL kernel launched outside any wrapped call: a non-blocking communicator's own
    // thread. The link still ties the kernel to its cudaStream_t so the collector can pair it
    // with the calls on that stream in order.
    link.prefix.u8a = static_cast<uint8_t>(format::Func::kUnknown);
  } else {
    return;  // compute launches need no link: LaunchRecords carry their host side
  }
  emit(r);
}

void CUPTIAPI CuptiTracer::on_buffer_requested(uint8_t** buffer, size_t* size,
                                               size_t* max_records) {
  CuptiTracer& t = instance();
  *max_records = 0;
  *buffer = t.pool_ ? t.pool_->acquire() : nullptr;
  *size = *buffer ? t.pool_->buffer_bytes() : 0;
}

void CUPTIAPI CuptiTracer::on_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer,
                                               size_t, size_t valid) {
  CuptiTracer& t = instance();
  uint64_t zero_before = 0, zero_after = 0;
  {
    std::lock_guard<std::mutex> lock(t.convert_mutex_);
    if (t.converter_) {
      const ConverterStats before = t.converter_->stats();
      const uint64_t names_before = t.converter_->strings().overflowed();
      zero_before = before.zero_timestamps;
      if (t.clock_.measured()) t.clock_.remeasure();
      t.converter_->convert_buffer(t.api_.ActivityGetNextRecord, buffer, valid);
      const ConverterStats& after = t.converter_->stats();
      zero_after = after.zero_timestamps;
      // What this buffer lost goes into the trace header, so the report can say it undercounts.
      add_loss(&format::LossCounts::kernels_filtered, after.filtered - before.filtered);
      add_loss(&format::LossCounts::cupti_unknown, after.unknown - before.unknown);
      add_loss(&format::LossCounts::names_lost,
               t.converter_->strings().overflowed() - names_before);
    }
  }
  if (t.pool_) t.pool_->release(buffer);
  size_t dropped = 0;
  if (t.api_.ActivityGetNumDroppedRecords != nullptr &&
      t.api_.ActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS &&
      dropped > 0) {
    add_cupti_dropped(dropped);
  }
  if (zero_after > zero_before) {
    add_cupti_dropped(zero_after - zero_before);
    t.zero_ts_seen_.store(true, std::memory_order_release);
  }
}

CUptiResult CuptiTracer::subscribe_and_enable(bool with_timestamp_callback, std::string& why) {
  g_launch_records.store(options_.filter.policy() == KernelFilter::Policy::kAll,
                         std::memory_order_relaxed);
  CUptiResult r = api_.Subscribe(&subscriber_, &CuptiTracer::on_api, nullptr);
  if (r != CUPTI_SUCCESS) {
    subscriber_ = nullptr;
    why = std::string("cuptiSubscribe: ") + api_.result_string(r);
    return r;
  }
  for (CUpti_CallbackId cbid : kLaunchCbids) {
    r = api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    if (r != CUPTI_SUCCESS) {
      why = std::string("cuptiEnableCallback: ") + api_.result_string(r);
      unsubscribe();
      return r;
    }
  }
  if (with_timestamp_callback) {
    // Must precede enabling any activity kind (cupti_activity.h).
    if (api_.ActivityRegisterTimestampCallback(&CuptiTracer::host_timestamp) != CUPTI_SUCCESS) {
      clock_.use_measured(reinterpret_cast<ClockConverter::CuptiTimestampFn>(api_.GetTimestamp));
    }
  }
  r = api_.ActivityRegisterCallbacks(&CuptiTracer::on_buffer_requested,
                                     &CuptiTracer::on_buffer_completed);
  if (r == CUPTI_SUCCESS) r = api_.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    why = std::string("cuptiActivityEnable(CONCURRENT_KERNEL): ") + api_.result_string(r);
    unsubscribe();
    return r;
  }
  // Optional kinds: a CUPTI without them still gives the kernels that matter.
  api_.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  api_.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  api_.ActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
  if (options_.filter.policy() == KernelFilter::Policy::kAll) {
    // The host side of every launch, from the launch callbacks (the driver ones are on for the
    // links already). A bounded trace (NCCLWATCH_KERNELS=nccl|sampled:N) leaves them out: one
    // per kernel, they would undo the bound (NCCL launches are still tied to their calls by the
    // link records). Optional: without them the launches lack their host side.
    for (CUpti_CallbackId cbid : kRuntimeLaunchCbids)
      api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  }
  return CUPTI_SUCCESS;
}

// The launch callbacks subscribe_and_enable turned on: the driver launches' (links, launch
// records) and, with every kernel kept, the runtime launches'.
void CuptiTracer::enable_callbacks(bool on) noexcept {
  if (subscriber_ == nullptr) return;
  for (CUpti_CallbackId cbid : kLaunchCbids)
    api_.EnableCallback(on ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  if (options_.filter.policy() == KernelFilter::Policy::kAll) {
    for (CUpti_CallbackId cbid : kRuntimeLaunchCbids)
      api_.EnableCallback(on ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  }
}

void CuptiTracer::switch_activity(bool on) noexcept {
  if (!started()) return;
  std::lock_guard<std::mutex> lock(switch_mutex_);
  if (activity_on_.load(std::memory_order_relaxed) == on) return;
  if (on) {
    api_.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    api_.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    api_.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    enable_callbacks(true);
    activity_on_.store(true, std::memory_order_relaxed);
    publish_gpu_timing_applied(true, now_ns());  // every launch from here on is seen
    return;
  }
  const int64_t t = now_ns();  // every launch before here was seen
  enable_callbacks(false);
  api_.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  api_.ActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
  api_.ActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
  api_.ActivityFlushAll(0);  // the window's records now, not at the next periodic flush
  activity_on_.store(false, std::memory_order_relaxed);
  publish_gpu_timing_applied(false, t);
}

void CuptiTracer::unsubscribe() noexcept {
  if (subscriber_ != nullptr) api_.Unsubscribe(subscriber_);
  subscriber_ = nullptr;
}

CuptiTracer::StartResult CuptiTracer::start(CuptiApi api, const TracerOptions& options,
                                            std::string& why) {
  if (started()) return StartResult::kStarted;
  api_ = std::move(api);
  options_ = options;
  pool_ = std::make_unique<BufferPool>(options.buffers, options.buffer_bytes);
  bool callback = !options.measured_clock && api_.ActivityRegisterTimestampCallback != nullptr;
  if (callback) {
    clock_.use_host_clock();
  } else {
    clock_.use_measured(reinterpret_cast<ClockConverter::CuptiTimestampFn>(api_.GetTimestamp));
  }
  converter_ = std::make_unique<ActivityConverter>(&emit, clock_, options.filter);
  CUptiResult r = subscribe_and_enable(callback, why);
  if (r != CUPTI_SUCCESS) {
    converter_.reset();
    pool_.reset();
    return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? StartResult::kBusy
                                                               : StartResult::kFailed;
  }
  started_.store(true, std::memory_order_release);
  thread_ = std::thread([this] { background(); });
  return StartResult::kStarted;
}

void CuptiTracer::background() noexcept {
  auto period =
      std::chrono::milliseconds(options_.flush_period_ms > 0 ? options_.flush_period_ms : 1000);
  auto slice = std::chrono::milliseconds(20);
  auto next_flush = std::chrono::steady_clock::now() + period;
  while (!stopping_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(slice);
    if (zero_ts_seen_.load(std::memory_order_acquire) &&
        !recovered_.load(std::memory_order_acquire)) {
      recover_from_zero_timestamps();
    }
    const bool want = gpu_timing_wanted();
    if (want != activity_on_.load(std::memory_order_relaxed)) switch_activity(want);
    if (std::chrono::steady_clock::now() >= next_flush) {
      api_.ActivityFlushAll(0);  // completed buffers only; never waits for the GPU
      next_flush = std::chrono::steady_clock::now() + period;
    }
  }
}

// CUDA 12.6u2-13.0: with a timestamp callback registered, GPU records can come back with zero
// timestamps. The callback cannot be unregistered (NULL is rejected), so detach CUPTI
// completely (cuptiFinalize) and attach again without it, converting CUPTI's own clock with a
// measured offset. Kernels completing during the switch are lost (counted as CUPTI drops).
void CuptiTracer::recover_from_zero_timestamps() noexcept {
  recovered_.store(true, std::memory_order_release);
  if (api_.Finalize == nullptr) {
    std::fprintf(stderr,
                 "ncclwatch: CUPTI returned zero kernel timestamps (CUDA 12.6u2-13.0 bug) and "
                 "cannot be re-attached; set NCCLWATCH_CUPTI_CLOCK=measured\n");
    return;
  }
  api_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  unsubscribe();
  api_.Finalize();
  {
    std::lock_guard<std::mutex> lock(convert_mutex_);
    clock_.use_measured(reinterpret_cast<ClockConverter::CuptiTimestampFn>(api_.GetTimestamp));
  }
  std::string why;
  if (subscribe_and_enable(false, why) != CUPTI_SUCCESS) {
    std::fprintf(stderr,
                 "ncclwatch: CUPTI returned zero kernel timestamps and could not be re-attached "
                 "(%s): no GPU timeline from now on\n",
                 why.c_str());
    return;
  }
  std::fprintf(stderr,
               "ncclwatch: CUPTI returned zero kernel timestamps (CUDA 12.6u2-13.0 bug): "
               "switched to a measured CUPTI clock offset\n");
  // Attached again with every kind on: the background loop switches them off again if wanted.
  if (!activity_on_.exchange(true)) publish_gpu_timing_applied(true, now_ns());
}

void CuptiTracer::flush() noexcept {
  if (!started()) return;
  api_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void CuptiTracer::stop() noexcept {
  if (!started()) return;
  stopping_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
  flush();
}

ConverterStats CuptiTracer::stats() {
  std::lock_guard<std::mutex> lock(convert_mutex_);
  return converter_ ? converter_->stats() : ConverterStats{};
}

}  // namespace ncclwatch::shim::gpu

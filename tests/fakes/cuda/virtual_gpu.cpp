#include "virtual_gpu.h"

#include <cuda.h>
#include <cupti.h>  // brings generated_cuda_meta.h (launch parameter structs) with its prerequisites
#include <cupti_driver_cbid.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace ncclwatch::fake {

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint32_t gettid_u32() {
  return static_cast<uint32_t>(syscall(SYS_gettid));
}

namespace {
thread_local int tls_device = 0;
}
int current_device() {
  return tls_device;
}
void set_current_device(int device) {
  tls_device = device;
}

void sleep_until_ns(int64_t t) {
  int64_t now = mono_ns();
  if (t <= now) return;
  timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

VirtualGpu& VirtualGpu::instance() {
  static VirtualGpu* gpu = [] {
    auto* g = new VirtualGpu();  // leaked: CUPTI threads may use it during exit
    const char* v = std::getenv("NCCLWATCH_FAKE_VIRTUAL_HOST");
    g->virtual_host_ = v != nullptr && std::strcmp(v, "1") == 0;
    return g;
  }();
  return *gpu;
}

FakeStream* VirtualGpu::resolve(void* stream) {
  auto v = reinterpret_cast<uintptr_t>(stream);
  if (v > 0x10) return static_cast<FakeStream*>(stream);
  // 0 = legacy default stream, 1/2 = cudaStreamLegacy / cudaStreamPerThread: one per device.
  std::lock_guard<std::mutex> lock(mu_);
  FakeStream*& s = default_streams_[tls_device];
  if (s == nullptr)
    s = new FakeStream{7u + static_cast<uint32_t>(tls_device), tls_device, 0, 0, false};
  return s;
}

FakeStream* VirtualGpu::create_stream(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto* s = new FakeStream{next_stream_id_++, device, 0, 0, false};
  streams_[s] = device;
  return s;
}

void VirtualGpu::destroy_stream(FakeStream* s) {
  if (reinterpret_cast<uintptr_t>(s) <= 0x10) return;
  std::unique_lock<std::mutex> lock(mu_);
  wait_not_pending(lock, s);
  streams_.erase(s);
  delete s;
}

const char* VirtualGpu::intern(const char* name) {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.emplace(name).first->c_str();  // kept for the process: CUPTI hands them out
}

void VirtualGpu::set_hooks(const NcclwatchFakeCuptiHooks* hooks) {
  std::lock_guard<std::mutex> lock(mu_);
  hooks_ = hooks;
}

const NcclwatchFakeCuptiHooks* VirtualGpu::hooks() {
  std::lock_guard<std::mutex> lock(mu_);
  return hooks_;
}

uint32_t VirtualGpu::next_correlation() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_correlation_++;
}

int64_t VirtualGpu::launch_time_locked() {
  return virtual_host_ && host_cursor_ != 0 ? host_cursor_ : mono_ns();
}

void VirtualGpu::synced(int64_t t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (virtual_host_) host_cursor_ = std::max(host_cursor_, t);
}

void VirtualGpu::use_virtual_host() {
  std::lock_guard<std::mutex> lock(mu_);
  virtual_host_ = true;
}

void VirtualGpu::host_sleep(int64_t ns) {
  int64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (virtual_host_) {
      host_cursor_ = (host_cursor_ != 0 ? host_cursor_ : mono_ns()) + ns;
      until = host_cursor_;
    }
  }
  // Virtual host: sleep until the virtual position, not for `ns` from now. Many short declared
  // works (launch overhead per kernel) would otherwise add their real oversleep up, and the real
  // clock (NCCL calls' host times) would drift ever further past the GPU timeline; this way a
  // late wake-up is absorbed by the next sleeps and the two clocks stay close.
  sleep_until_ns(virtual_host_ ? until : mono_ns() + ns);
}

void VirtualGpu::wait_not_pending(std::unique_lock<std::mutex>& lock, FakeStream* s) {
  cv_.wait(lock, [&] { return s->pending == 0; });
}

void VirtualGpu::run(FakeStream* s, int kind, const char* name, int64_t duration_ns, uint64_t bytes,
                     uint32_t cbid, const void* params, uint32_t runtime_cbid, uint32_t graph_id) {
  const int64_t enter = mono_ns();
  const char* interned = intern(name);
  const uint32_t corr = next_correlation();
  const NcclwatchFakeCuptiHooks* h = hooks();
  if (h && runtime_cbid != 0) h->runtime_api(0, runtime_cbid, corr);
  if (h && cbid != 0) h->launch_enter(cbid, "cuLaunchKernel", interned, params, corr);
  NcclwatchFakeActivity a{};
  {
    std::unique_lock<std::mutex> lock(mu_);
    wait_not_pending(lock, s);
    int64_t start = std::max(launch_time_locked(), s->free_ns);
    s->free_ns = start + std::max<int64_t>(duration_ns, 1);
    a = {kind,
         interned,
         start,
         s->free_ns,
         static_cast<uint32_t>(s->device),
         s->id,
         corr,
         graph_id,
         graph_id ? uint64_t{1} : 0,
         bytes};
  }
  if (h) {
    if (cbid != 0) h->launch_exit(cbid, params, corr);
    h->activity(&a);
    if (cbid != 0) {
      NcclwatchFakeApiCall call{cbid, runtime_cbid, corr, gettid_u32(), enter, mono_ns()};
      h->api_call(&call);
    }
    if (runtime_cbid != 0) h->runtime_api(1, runtime_cbid, corr);
  }
}

int64_t VirtualGpu::nccl_launch(FakeStream* s, const char* name, uint64_t* token) {
  const int64_t enter = mono_ns();
  const char* interned = intern(name);
  const uint32_t corr = next_correlation();
  // What NCCL >= 2.22 does: cuLaunchKernelEx through a driver pointer, config naming the stream.
  CUlaunchConfig config{};
  config.hStream = reinterpret_cast<CUstream>(s);
  cuLaunchKernelEx_params params{&config, nullptr, nullptr, nullptr};
  if (const auto* h = hooks()) {
    h->launch_enter(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", interned, &params,
                    corr);
  }
  int64_t start = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    wait_not_pending(lock, s);
    start = std::max(launch_time_locked(), s->free_ns);
    s->pending++;
    uint64_t t = next_token_++;
    pending_[t] = Pending{s, interned, start, corr, gettid_u32(), enter, mono_ns()};
    *token = t;
  }
  if (const auto* h = hooks())
    h->launch_exit(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &params, corr);
  return start;
}

void VirtualGpu::nccl_complete(uint64_t token, int64_t end_ns) {
  Pending p{};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(token);
    if (it == pending_.end()) return;
    p = it->second;
    pending_.erase(it);
    p.stream->free_ns = std::max(end_ns, p.start_ns);
    p.stream->pending--;
  }
  cv_.notify_all();
  if (const auto* h = hooks()) {
    NcclwatchFakeActivity a{kFakeKernel,
                            p.name,
                            p.start_ns,
                            std::max(end_ns, p.start_ns),
                            static_cast<uint32_t>(p.stream->device),
                            p.stream->id,
                            p.correlation,
                            0,
                            0,
                            0};
    h->activity(&a);
    NcclwatchFakeApiCall call{CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                              0,
                              p.correlation,
                              p.tid,
                              p.launch_enter_ns,
                              p.launch_exit_ns};
    h->api_call(&call);
  }
}

void VirtualGpu::record_event(FakeEvent* e, FakeStream* s) {
  std::unique_lock<std::mutex> lock(mu_);
  wait_not_pending(lock, s);
  e->recorded = true;
  e->time_ns = std::max(launch_time_locked(), s->free_ns);
}

void VirtualGpu::wait_event(FakeStream* s, const FakeEvent* e) {
  std::unique_lock<std::mutex> lock(mu_);
  if (e->recorded) s->free_ns = std::max(s->free_ns, e->time_ns);
}

int64_t VirtualGpu::stream_free_time(FakeStream* s) {
  std::unique_lock<std::mutex> lock(mu_);
  wait_not_pending(lock, s);
  return s->free_ns;
}

int64_t VirtualGpu::device_free_time(int device) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    for (auto& [t, p] : pending_) {
      if (p.stream->device == device) return false;
    }
    return true;
  });
  int64_t t = 0;
  for (auto& [s, d] : streams_) {
    if (d == device) t = std::max(t, s->free_ns);
  }
  auto it = default_streams_.find(device);
  if (it != default_streams_.end()) t = std::max(t, it->second->free_ns);
  return t;
}

void VirtualGpu::range(int push, const char* name) {
  // Virtual host: a range is dated at the host's virtual position, like the launches in it, so
  // step windows cut from NVTX ranges line up with the GPU timeline whatever the real scheduling
  // (a host descheduled just before a push would otherwise shift the window past the step's
  // first kernels).
  int64_t t = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = launch_time_locked();
  }
  if (const auto* h = hooks()) h->range(push, name ? intern(name) : nullptr, t, gettid_u32());
}

}  // namespace ncclwatch::fake

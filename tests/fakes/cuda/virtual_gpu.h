// The fake GPU: streams on a virtual clock (CLOCK_MONOTONIC ns). Work on a stream starts at
// max(launch time, time the stream becomes free) and runs its given duration; nothing really
// executes. NCCL kernels (through the fake-GPU seam) are "pending" between launch and complete:
// their end is decided by the fake NCCL once every rank has launched.
//
// Virtual host (NCCLWATCH_FAKE_VIRTUAL_HOST=1, for tests about the analysis): a launch is dated
// from the host's virtual position — the end of its last synchronize plus the host work it
// declared (ncclwatch_fake_cuda_host_sleep) — not from the real clock, so a host descheduled on
// a loaded machine does not shift the GPU timeline. NVTX ranges are dated at that virtual
// position too (step windows must line up with the kernels); other host-side timestamps (API
// calls, NCCL calls) stay real, and host work sleeps until the virtual position so the real
// clock stays close to it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "fake_cuda_hooks.h"

namespace ncclwatch::fake {

struct FakeStream {
  uint32_t id = 0;
  int device = 0;
  int64_t free_ns = 0;  // virtual time the last queued work ends
  int pending = 0;      // NCCL kernels launched, end not yet known
  bool capturing = false;
};

struct FakeEvent {
  bool recorded = false;
  int64_t time_ns = 0;
  bool timing = true;  // created without cudaEventDisableTiming
};

class VirtualGpu {
 public:
  static VirtualGpu& instance();

  FakeStream* resolve(void* stream);  // nullptr / per-thread handles -> the default stream
  FakeStream* create_stream(int device);
  void destroy_stream(FakeStream* s);

  // A compute kernel, memcpy or memset: queued now, runs `duration_ns`.
  // `cbid`: the driver launch reported to CUPTI (0 = no launch callback, e.g. memcpy);
  // `runtime_cbid`: the runtime function it was made from (cudaLaunchKernel...), 0 for none.
  void run(FakeStream* s, int kind, const char* name, int64_t duration_ns, uint64_t bytes,
           uint32_t cbid, const void* driver_params, uint32_t runtime_cbid, uint32_t graph_id = 0);

  // The seam: launch an NCCL kernel (start returned), complete it with its end.
  int64_t nccl_launch(FakeStream* s, const char* name, uint64_t* token);
  void nccl_complete(uint64_t token, int64_t end_ns);

  void record_event(FakeEvent* e, FakeStream* s);
  void wait_event(FakeStream* s, const FakeEvent* e);  // later work on s starts after e
  int64_t stream_free_time(FakeStream* s);             // waits for pending NCCL kernels on it
  int64_t device_free_time(int device);

  const char* intern(const char* name);
  void set_hooks(const NcclwatchFakeCuptiHooks* hooks);
  const NcclwatchFakeCuptiHooks* hooks();
  uint32_t next_correlation();
  void range(int push, const char* name);

  // Virtual host: a synchronize returned after the GPU reached `t`; the host declared `ns` of
  // work (sleeps really too). Without virtual host, synced does nothing, host_sleep sleeps.
  void synced(int64_t t);
  void use_virtual_host();  // as NCCLWATCH_FAKE_VIRTUAL_HOST=1 (before the first launch)
  void host_sleep(int64_t ns);

 private:
  struct Pending {
    FakeStream* stream;
    const char* name;
    int64_t start_ns;
    uint32_t correlation;
    uint32_t tid;
    int64_t launch_enter_ns;
    int64_t launch_exit_ns;
  };
  void wait_not_pending(std::unique_lock<std::mutex>& lock, FakeStream* s);
  int64_t launch_time_locked();  // when a launch happens: real now, or the virtual host's

  bool virtual_host_ = false;
  int64_t host_cursor_ = 0;  // virtual host position (0: not synchronized yet: real time)
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_set<std::string> names_;  // node-based: c_str() of an element never moves
  std::unordered_map<uint64_t, Pending> pending_;
  std::unordered_map<int, FakeStream*> default_streams_;
  std::unordered_map<FakeStream*, int> streams_;  // created streams, for device-wide sync
  uint64_t next_token_ = 1;
  uint32_t next_stream_id_ = 100;
  uint32_t next_correlation_ = 1;
  const NcclwatchFakeCuptiHooks* hooks_ = nullptr;
};

int64_t mono_ns();
uint32_t gettid_u32();
int current_device();
void set_current_device(int device);
void sleep_until_ns(int64_t t);

}  // namespace ncclwatch::fake

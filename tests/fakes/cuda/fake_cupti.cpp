// Fake libcupti.so: the CUPTI calls ncclwatch makes, with the real signatures from cupti.h,
// delivering what the virtual GPU did (fake_cuda_hooks.h) through the real activity-buffer
// protocol: buffers requested from the client, filled with real CUpti_Activity* layouts,
// handed back on a delivery thread (every 10 ms, records whose work has ended) or by
// cuptiActivityFlushAll, walked by the client with cuptiActivityGetNextRecord.
//
// Switches (environment):
//   NCCLWATCH_FAKE_CUPTI_BUSY=1     cuptiSubscribe ->
//   CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
//                                   (another profiler holds CUPTI)
//   NCCLWATCH_FAKE_CUPTI_ZERO_TS=1  GPU records carry zero timestamps while a timestamp callback
//                                   is registered (the CUDA 12.6u2-13.0 bug)
//   NCCLWATCH_FAKE_CUPTI_COUNTS=DIR at exit, DIR/fake_cupti.<pid>.txt says how many kernels ran
//                                   and how many of them became activity records, and how many
//                                   driver launches there were and how many reached the
//                                   subscriber's callback (tests of switching CUPTI per window)
// Without a timestamp callback timestamps are on CUPTI's default clock, CLOCK_REALTIME.
// Like CUPTI, a kind or callback disabled (cuptiActivityDisable, cuptiEnableCallback(0)) gives
// nothing for the work of that time; records already queued stay and are handed over by the
// delivery thread or cuptiActivityFlushAll.
#include <cupti.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda_hooks.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

int64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && v[0] && std::strcmp(v, "0") != 0;
}

// One queued activity record, in its final CUPTI layout; `ready_ns` = when the GPU work ends.
struct Queued {
  int64_t ready_ns;
  size_t size;
  alignas(8) unsigned char bytes[sizeof(CUpti_ActivityKernel10)];
};
static_assert(sizeof(CUpti_ActivityKernel10) >= sizeof(CUpti_ActivityMemcpy6));
static_assert(sizeof(CUpti_ActivityKernel10) >= sizeof(CUpti_ActivityAPI));
static_assert(sizeof(CUpti_ActivityKernel10) >= sizeof(CUpti_ActivityMarker2));

struct State {
  std::mutex mu;
  std::mutex deliver_mu;  // one delivery at a time, like CUPTI's worker
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  bool subscribed = false;
  std::vector<bool> driver_cb = std::vector<bool>(1024, false);
  std::vector<bool> runtime_cb = std::vector<bool>(1024, false);
  std::vector<bool> driver_api_records = std::vector<bool>(1024, false);
  std::vector<bool> runtime_api_records = std::vector<bool>(1024, false);
  bool kernels = false, memcpy = false, memset = false, markers = false;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  std::deque<Queued> queue;
  size_t dropped = 0;
  uint32_t next_marker = 1;
  bool thread_started = false;
};
State& st() {
  static State* s = new State();  // leaked: the delivery thread runs until exit
  return *s;
}
thread_local std::vector<uint32_t> tls_ranges;

// What ran against what was reported (NCCLWATCH_FAKE_CUPTI_COUNTS).
std::atomic<uint64_t> g_kernels_run{0}, g_kernels_recorded{0}, g_launches{0}, g_launch_callbacks{0};

__attribute__((destructor)) void write_counts() {
  const char* dir = std::getenv("NCCLWATCH_FAKE_CUPTI_COUNTS");
  if (dir == nullptr || dir[0] == '\0') return;
  const std::string path = std::string(dir) + "/fake_cupti." + std::to_string(getpid()) + ".txt";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f,
                 "kernels_run %llu\nkernels_recorded %llu\nlaunches %llu\nlaunch_callbacks %llu\n",
                 static_cast<unsigned long long>(g_kernels_run.load()),
                 static_cast<unsigned long long>(g_kernels_recorded.load()),
                 static_cast<unsigned long long>(g_launches.load()),
                 static_cast<unsigned long long>(g_launch_callbacks.load()));
    std::fclose(f);
  }
}

// What this CUPTI's clock reads now: the client's timestamp callback, else CLOCK_REALTIME.
int64_t cupti_now(const State& s) {
  return s.timestamp != nullptr ? static_cast<int64_t>(s.timestamp()) : clock_ns(CLOCK_REALTIME);
}

// Offset from the host clock (CLOCK_MONOTONIC, what the virtual GPU uses) to what this CUPTI
// reports, read once per record so a record's start and end shift alike. Two clocks cannot be
// read at one instant: a thread preempted between the reads (tens of us on a busy machine) would
// shift this record by that much, so one rank's copy of a collective's kernel would end tens of
// us off its peers' (a real GPU stamps the kernel itself). Best of a few bracketed reads: the
// narrowest bracket bounds the error; a preemption inside every one of them is vanishingly rare.
int64_t clock_delta() {
  const State& s = st();
  int64_t best_width = INT64_MAX;
  int64_t best_delta = 0;
  for (int i = 0; i < 8 && best_width > 200; ++i) {
    const int64_t before = clock_ns(CLOCK_MONOTONIC);
    const int64_t cupti = cupti_now(s);
    const int64_t after = clock_ns(CLOCK_MONOTONIC);
    if (after - before < best_width) {
      best_width = after - before;
      best_delta = cupti - (before + (after - before) / 2);
    }
  }
  return best_delta;
}
bool zero_gpu_timestamps() {
  return st().timestamp != nullptr && env_on("NCCLWATCH_FAKE_CUPTI_ZERO_TS");
}
uint64_t gpu_ts(int64_t t, int64_t delta) {
  return zero_gpu_timestamps() ? 0 : static_cast<uint64_t>(t + delta);
}

template <typename T>
void enqueue(const T& rec, int64_t ready_ns) {
  Queued q;
  q.ready_ns = ready_ns;
  q.size = (sizeof(T) + 7) & ~size_t{7};
  std::memset(q.bytes, 0, sizeof(q.bytes));
  std::memcpy(q.bytes, &rec, sizeof(T));
  st().queue.push_back(q);
}

// Memcpy and memset activity records carry the same fields; only the record type differs.
template <typename Copy>
Copy copy_activity(CUpti_ActivityKind kind, const NcclwatchFakeActivity& a, int64_t d) {
  Copy m{};
  m.kind = kind;
  m.bytes = a.bytes;
  m.start = gpu_ts(a.start_ns, d);
  m.end = gpu_ts(a.end_ns, d);
  m.deviceId = a.device;
  m.contextId = 1;
  m.streamId = a.stream_id;
  m.correlationId = a.correlation;
  return m;
}

// Calls the subscriber for one API callback (domain, cbid, site) when it enabled that cbid, as
// CUPTI does: outside the state lock, with the call's parameters and correlation id.
void fire(CUpti_CallbackDomain domain, uint32_t cbid, CUpti_ApiCallbackSite site,
          const char* function, const char* symbol, const void* params, uint32_t corr) {
  CUpti_CallbackFunc cb = nullptr;
  void* user = nullptr;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    const std::vector<bool>& on =
        domain == CUPTI_CB_DOMAIN_RUNTIME_API ? st().runtime_cb : st().driver_cb;
    if (!st().subscribed || cbid >= on.size() || !on[cbid]) return;
    cb = st().callback;
    user = st().userdata;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && site == CUPTI_API_ENTER) ++g_launch_callbacks;
  uint64_t correlation_data = 0;
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = function;
  data.functionParams = params;
  data.symbolName = symbol;
  data.correlationId = corr;
  data.correlationData = &correlation_data;
  cb(user, domain, cbid, &data);
}

// The runtime-domain callbacks around a runtime launch (real CUPTI calls them for every runtime
// function the application calls, when the subscriber enabled that cbid).
void on_runtime_api(int exit, uint32_t cbid, uint32_t corr) {
  fire(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, exit ? CUPTI_API_EXIT : CUPTI_API_ENTER,
       "cudaLaunchKernel", nullptr, nullptr, corr);
}

// The driver callback at the launch's exit (same correlation as its entry).
void on_launch_exit(uint32_t cbid, const void* params, uint32_t corr) {
  fire(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_EXIT, nullptr, nullptr, params, corr);
}

void on_launch(uint32_t cbid, const char* function, const char* symbol, const void* params,
               uint32_t corr) {
  ++g_launches;
  fire(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_ENTER, function, symbol, params, corr);
}

void on_activity(const NcclwatchFakeActivity* a) {
  std::lock_guard<std::mutex> lock(st().mu);
  State& s = st();
  const int64_t d = clock_delta();
  if (a->kind == kFakeKernel) ++g_kernels_run;
  if (a->kind == kFakeKernel && s.kernels) {
    ++g_kernels_recorded;
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = gpu_ts(a->start_ns, d);
    k.end = gpu_ts(a->end_ns, d);
    k.completed = k.end;
    k.deviceId = a->device;
    k.contextId = 1;
    k.streamId = a->stream_id;
    k.correlationId = a->correlation;
    k.name = a->name;
    k.graphId = a->graph_id;
    k.graphNodeId = a->graph_node_id;
    enqueue(k, a->end_ns);
  } else if (a->kind == kFakeMemcpy && s.memcpy) {
    enqueue(copy_activity<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY, *a, d), a->end_ns);
  } else if (a->kind == kFakeMemset && s.memset) {
    enqueue(copy_activity<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET, *a, d), a->end_ns);
  }
}

// A launch made through the runtime is one RUNTIME record (the driver call inside it gives no
// DRIVER record, as real CUPTI does); a direct driver launch is one DRIVER record.
void on_api_call(const NcclwatchFakeApiCall* c) {
  std::lock_guard<std::mutex> lock(st().mu);
  const bool runtime = c->runtime_cbid != 0;
  const uint32_t cbid = runtime ? c->runtime_cbid : c->cbid;
  const std::vector<bool>& enabled = runtime ? st().runtime_api_records : st().driver_api_records;
  if (cbid >= enabled.size() || !enabled[cbid]) return;
  CUpti_ActivityAPI a{};
  a.kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = cbid;
  const int64_t d = clock_delta();
  a.start = static_cast<uint64_t>(c->start_ns + d);
  a.end = static_cast<uint64_t>(c->end_ns + d);
  a.processId = static_cast<uint32_t>(getpid());
  a.threadId = c->tid;
  a.correlationId = c->correlation;
  enqueue(a, c->end_ns);
}

void on_range(int push, const char* name, int64_t t, uint32_t tid) {
  std::lock_guard<std::mutex> lock(st().mu);
  if (!st().markers) return;
  if (!push && tls_ranges.empty()) return;
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.timestamp = static_cast<uint64_t>(t + clock_delta());
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = static_cast<uint32_t>(getpid());
  m.objectId.pt.threadId = tid;
  if (push) {
    m.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
    m.id = st().next_marker++;
    m.name = name;
    tls_ranges.push_back(m.id);
  } else {
    m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
    m.id = tls_ranges.back();
    tls_ranges.pop_back();
  }
  enqueue(m, t);
}

const NcclwatchFakeCuptiHooks kHooks{on_launch, on_activity,    on_api_call,
                                     on_range,  on_runtime_api, on_launch_exit};

void install_hooks_if_needed() {
  static std::atomic<bool> installed{false};
  if (!installed.exchange(true)) ncclwatch_fake_cuda_set_cupti_hooks(&kHooks);
}

// Hands every queued record that is ready (all of them when `all`) to the client, one buffer
// at a time, on the calling thread.
void deliver(bool all) {
  std::lock_guard<std::mutex> deliver_lock(st().deliver_mu);
  for (;;) {
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    {
      std::lock_guard<std::mutex> lock(st().mu);
      request = st().request;
      complete = st().complete;
      int64_t now = clock_ns(CLOCK_MONOTONIC);
      if (st().queue.empty() || (!all && st().queue.front().ready_ns > now)) return;
      if (request == nullptr || complete == nullptr) return;
    }
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    request(&buffer, &size, &max_records);
    size_t used = 0;
    {
      std::lock_guard<std::mutex> lock(st().mu);
      int64_t now = clock_ns(CLOCK_MONOTONIC);
      auto& q = st().queue;
      if (buffer == nullptr || size == 0) {
        // No buffer: CUPTI drops what it cannot store.
        while (!q.empty() && (all || q.front().ready_ns <= now)) {
          q.pop_front();
          st().dropped++;
        }
        return;
      }
      while (!q.empty() && (all || q.front().ready_ns <= now) && used + q.front().size <= size) {
        std::memcpy(buffer + used, q.front().bytes, q.front().size);
        used += q.front().size;
        q.pop_front();
      }
    }
    complete(nullptr, 0, buffer, size, used);
    if (used == 0) return;
  }
}

void delivery_thread() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    deliver(false);
  }
}

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MARKER:
      return sizeof(CUpti_ActivityMarker2);
    default:
      return 0;
  }
}

}  // namespace

FAKE_API CUptiResult cuptiGetVersion(uint32_t* version) {
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  switch (result) {
    case CUPTI_SUCCESS:
      *str = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *str = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      break;
  }
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiGetTimestamp(uint64_t* ts) {
  *ts = static_cast<uint64_t>(clock_ns(CLOCK_REALTIME));
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc cb,
                                    void* userdata) {
  if (env_on("NCCLWATCH_FAKE_CUPTI_BUSY")) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  std::lock_guard<std::mutex> lock(st().mu);
  if (st().subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  st().subscribed = true;
  st().callback = cb;
  st().userdata = userdata;
  *sub = reinterpret_cast<CUpti_SubscriberHandle>(&st());
  install_hooks_if_needed();
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard<std::mutex> lock(st().mu);
  st().subscribed = false;
  st().callback = nullptr;
  std::fill(st().driver_cb.begin(), st().driver_cb.end(), false);
  std::fill(st().runtime_cb.begin(), st().runtime_cb.end(), false);
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  std::lock_guard<std::mutex> lock(st().mu);
  if (!st().subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < st().driver_cb.size())
    st().driver_cb[cbid] = enable != 0;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < st().runtime_cb.size())
    st().runtime_cb[cbid] = enable != 0;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  if (fn == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(st().mu);
  st().timestamp = fn;
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(st().mu);
  st().request = request;
  st().complete = complete;
  if (!st().thread_started) {
    st().thread_started = true;
    std::thread(delivery_thread).detach();
  }
  install_hooks_if_needed();
  return CUPTI_SUCCESS;
}
static CUptiResult set_kind(CUpti_ActivityKind kind, bool on) {
  std::lock_guard<std::mutex> lock(st().mu);
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      st().kernels = on;
      return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      st().memcpy = on;
      return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      st().memset = on;
      return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_MARKER:
      st().markers = on;
      return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      std::fill(st().driver_api_records.begin(), st().driver_api_records.end(), on);
      return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      std::fill(st().runtime_api_records.begin(), st().runtime_api_records.end(), on);
      return CUPTI_SUCCESS;
    default:
      return CUPTI_ERROR_NOT_COMPATIBLE;
  }
}
FAKE_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  return set_kind(kind, true);
}
FAKE_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  return set_kind(kind, false);
}
FAKE_API CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard<std::mutex> lock(st().mu);
  if (cbid < st().driver_api_records.size()) st().driver_api_records[cbid] = enable != 0;
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard<std::mutex> lock(st().mu);
  if (cbid < st().runtime_api_records.size()) st().runtime_api_records[cbid] = enable != 0;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  deliver((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  std::lock_guard<std::mutex> lock(st().mu);
  *dropped = st().dropped;
  st().dropped = 0;
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                                CUpti_Activity** record) {
  size_t offset = 0;
  if (*record != nullptr) {
    auto* current = reinterpret_cast<uint8_t*>(*record);
    size_t size = record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(current - buffer) + ((size + 7) & ~size_t{7});
  }
  if (offset + sizeof(CUpti_ActivityKind) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  size_t size = record_size(next->kind);
  if (size == 0 || offset + size > valid) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}
// Detach: deliver what is left, forget every registration (a later subscribe starts afresh).
FAKE_API CUptiResult cuptiFinalize(void) {
  deliver(true);
  std::lock_guard<std::mutex> lock(st().mu);
  State& s = st();
  s.subscribed = false;
  s.callback = nullptr;
  s.timestamp = nullptr;
  s.request = nullptr;
  s.complete = nullptr;
  s.kernels = s.memcpy = s.memset = s.markers = false;
  std::fill(s.driver_cb.begin(), s.driver_cb.end(), false);
  std::fill(s.runtime_cb.begin(), s.runtime_cb.end(), false);
  std::fill(s.driver_api_records.begin(), s.driver_api_records.end(), false);
  std::fill(s.runtime_api_records.begin(), s.runtime_api_records.end(), false);
  return CUPTI_SUCCESS;
}

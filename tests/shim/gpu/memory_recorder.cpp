// An in-memory implementation of shim/record/recorder.h for testing the GPU part in-process
// (heaptrack's habit: the recording API is called directly, no LD_PRELOAD, no segment).
#include "memory_recorder.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <mutex>

namespace ncclwatch::shim {
namespace {
std::mutex mu;
std::vector<format::Record>* records = new std::vector<format::Record>();
std::atomic<CallObserver*> observer{nullptr};
thread_local InFlightCall tls_call;
}  // namespace

std::atomic<uint64_t> test_cupti_dropped{0};
format::LossCounts test_losses{};
std::atomic<uint32_t> test_timing_mode{0};
std::atomic<uint32_t> test_kernel_filter{0};
std::atomic<bool> test_recording{true};

int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
uint32_t thread_id() noexcept {
  thread_local uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}
bool ensure_recorder() noexcept {
  return test_recording.load();
}
bool recording() noexcept {
  return test_recording.load();
}
bool emit(const format::Record& r) noexcept {
  if (!test_recording.load()) return false;
  std::lock_guard<std::mutex> lock(mu);
  records->push_back(r);
  return true;
}
void add_cupti_dropped(uint64_t n) noexcept {
  test_cupti_dropped += n;
}
void add_loss(uint64_t format::LossCounts::*counter, uint64_t n) noexcept {
  std::lock_guard<std::mutex> lock(mu);
  test_losses.*counter += n;
}
void set_kernel_filter(uint32_t code) noexcept {
  test_kernel_filter = code;
}

void set_timing_mode(uint32_t mode) noexcept {
  test_timing_mode = mode;
}
const InFlightCall& in_flight_call() noexcept {
  return tls_call;
}
void set_call_observer(CallObserver* o) noexcept {
  observer.store(o);
}

std::vector<format::Record> test_records() {
  std::lock_guard<std::mutex> lock(mu);
  return *records;
}
void test_clear_records() {
  std::lock_guard<std::mutex> lock(mu);
  records->clear();
}
CallObserver* test_observer() {
  return observer.load();
}

// What the NCCL wrappers do around the real call.
void test_call(const InFlightCall& call, const std::function<int()>& real) {
  tls_call = call;
  tls_call.active = true;
  if (auto* o = observer.load()) o->before_call(tls_call);
  int result = real();
  if (auto* o = observer.load()) o->after_call(tls_call, result);
  tls_call = InFlightCall{};
}

}  // namespace ncclwatch::shim

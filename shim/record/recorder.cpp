// The process-wide recorder state behind recorder.h.
//
// State machine: kUntouched (nothing created: a process that never calls NCCL leaves no trace)
// -> kRecording at the first ensure_recorder(), or kOff (NCCLWATCH=off, creation failed) ->
// kClosedAtExit when the exit flush has closed the trace.
//
// The exit flush is an atexit handler registered at load (install_exit_flush, from the
// load-time constructor), so it runs after nearly every other one (atexit runs them in reverse
// order of registration): NCCL calls from the application's atexit handlers and static
// destructors (e.g. a communicator destroyed by a library's global object) are recorded. Calls
// after it (handlers of libraries initialised before the shim) find the trace closed: the first
// one says so in one line.
// A forked child is reset to kUntouched by the atfork handler: it creates its own recorder, with
// its own pid, on its first NCCL call, and never writes into the parent's ring or file.
#include "record/recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "ncclwatch/in_flight_slot.h"
#include "record/in_flight_table.h"
#include "record/recorder_control.h"
#include "record/recorder_instance.h"

namespace ncclwatch::shim {
namespace {

enum State : int { kUntouched = 0, kRecording = 1, kOff = 2, kClosedAtExit = 3 };

std::atomic<int> g_state{kUntouched};
std::atomic<RecorderInstance*> g_recorder{nullptr};
std::atomic<CallObserver*> g_observer{nullptr};
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
bool g_identity_from_comm_done = false;  // guarded by g_mutex
thread_local InFlightCall t_in_flight;
// Finished or abandoned recorders are never deleted (a thread may still be inside emit() with the
// pointer); kept here so leak checkers see them reachable.
RecorderInstance* g_retired[64];
int g_retired_count = 0;  // guarded by g_mutex

void retire(RecorderInstance* r) {
  if (g_retired_count < 64) g_retired[g_retired_count++] = r;
}
thread_local uint32_t t_tid = 0;
// The calling thread's in-flight slot in the segment of recorder t_slot_recorder (nullptr if it
// found none free). A new recorder (tests, forked child) means a new claim.
thread_local format::InFlightSlot* t_slot = nullptr;
thread_local const RecorderInstance* t_slot_recorder = nullptr;
// Frees the slot when the thread exits (registered at the first claim; segments are never
// unmapped, so an old recorder's slot is still writable).
pthread_key_t g_slot_key;
pthread_once_t g_slot_key_once = PTHREAD_ONCE_INIT;
void release_slot_at_thread_exit(void* slot) {
  release_in_flight_slot(static_cast<format::InFlightSlot*>(slot));
}
std::atomic<bool> g_slot_key_made{false};
void make_slot_key() {
  if (pthread_key_create(&g_slot_key, &release_slot_at_thread_exit) == 0) g_slot_key_made = true;
}

[[gnu::noinline]] void claim_slot(RecorderInstance* r) noexcept {
  if (t_slot != nullptr && t_slot_recorder != r) release_in_flight_slot(t_slot);
  t_slot = claim_in_flight_slot(r->header(), thread_id());
  t_slot_recorder = r;
  pthread_once(&g_slot_key_once, &make_slot_key);
  if (g_slot_key_made) pthread_setspecific(g_slot_key, t_slot);
}

void finish_locked(bool at_exit) {
  RecorderInstance* r = g_recorder.load();
  if (!at_exit) {
    g_state.store(kUntouched);
  } else if (g_state.load() != kOff) {  // NCCLWATCH=off (or a failed start) stays silent
    g_state.store(kClosedAtExit);
  }
  g_recorder.store(nullptr);
  if (r == nullptr) return;
  r->finish();
  retire(r);
}

// Without `ncclwatch run` (which says it itself), the trace location is said once, at exit, by
// one process per node (local rank 0, or the only one when no launcher says): a plain LD_PRELOAD
// run would otherwise leave ./ncclwatch-local-<pid> behind without a word.
void say_where_the_traces_went(const RecorderInstance& r) {
  const Settings& s = r.settings();
  if (!s.exit_line || s.local_rank > 0) return;
  std::fprintf(stderr, "ncclwatch: traces in %s (ncclwatch report %s)\n", s.dir.c_str(),
               s.dir.c_str());
}

void at_exit() {
  pthread_mutex_lock(&g_mutex);
  RecorderInstance* r = g_recorder.load();
  const bool was_recording = r != nullptr && g_state.load() == kRecording;
  finish_locked(true);
  if (was_recording) say_where_the_traces_went(*r);
  pthread_mutex_unlock(&g_mutex);
}

void atfork_prepare() {
  pthread_mutex_lock(&g_mutex);
}
void atfork_parent() {
  pthread_mutex_unlock(&g_mutex);
}
void atfork_child() {
  // Only this thread exists in the child. Forget the parent's recorder without touching it.
  RecorderInstance* r = g_recorder.load();
  if (r != nullptr) {
    r->abandon();  // kept, never destroyed: its std::thread is the parent's
    retire(r);
  }
  g_recorder.store(nullptr);
  g_state.store(kUntouched);
  g_identity_from_comm_done = false;
  t_tid = 0;
  t_in_flight = InFlightCall{};
  // The slot is the parent's (same thread in the parent's segment): forget it, never free it.
  t_slot = nullptr;
  t_slot_recorder = nullptr;
  if (g_slot_key_made) pthread_setspecific(g_slot_key, nullptr);
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_mutex = fresh;
}

void register_process_hooks_once() {
  static bool registered = false;  // guarded by g_mutex; survives fork (hooks are inherited)
  if (registered) return;
  registered = true;
  pthread_atfork(&atfork_prepare, &atfork_parent, &atfork_child);
  install_exit_flush();  // normally done at load already
}

void report_call_after_exit() {
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true)) {
    std::fprintf(stderr,
                 "ncclwatch: NCCL call after the trace was closed at exit (an atexit handler or "
                 "static destructor that runs after the shim's): not recorded, nor later ones\n");
  }
}

}  // namespace

void install_exit_flush() noexcept {
  static std::atomic<bool> installed{false};
  if (!installed.exchange(true)) std::atexit(&at_exit);
}

uint32_t thread_id() noexcept {
  if (t_tid == 0) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_tid;
}

bool recording() noexcept {
  return g_state.load(std::memory_order_relaxed) == kRecording;
}

bool ensure_recorder() noexcept {
  int state = g_state.load(std::memory_order_acquire);
  if (state == kRecording) return true;
  if (state == kOff) return false;
  if (state == kClosedAtExit) {
    report_call_after_exit();
    return false;
  }
  pthread_mutex_lock(&g_mutex);
  if (g_state.load() == kUntouched) {
    try {
      report_settings_problems();
      const Settings& config = settings();
      if (!config.enabled) {
        g_state.store(kOff);
      } else {
        std::string error;
        auto r = RecorderInstance::create(config, &error);
        if (!r) {
          std::fprintf(stderr, "ncclwatch: %s; recording off\n", error.c_str());
          g_state.store(kOff);
        } else {
          register_process_hooks_once();
          g_recorder.store(r.release(), std::memory_order_release);
          g_state.store(kRecording, std::memory_order_release);
        }
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ncclwatch: cannot start recording: %s; recording off\n", e.what());
      g_state.store(kOff);
    }
  }
  bool on = g_state.load() == kRecording;
  pthread_mutex_unlock(&g_mutex);
  return on;
}

bool emit(const format::Record& record) noexcept {
  RecorderInstance* r = g_recorder.load(std::memory_order_acquire);
  if (r == nullptr) return false;
  return r->ring().push(record);
}

void mark_entered(const format::CallEntry& entry) noexcept {
  RecorderInstance* r = g_recorder.load(std::memory_order_acquire);
  if (r == nullptr) return;
  if (t_slot_recorder != r) claim_slot(r);
  if (t_slot != nullptr) format::in_flight_enter(*t_slot, entry);
}

void mark_returned() noexcept {
  if (t_slot != nullptr) format::in_flight_leave(*t_slot);
}

void add_cupti_dropped(uint64_t n) noexcept {
  RecorderInstance* r = g_recorder.load(std::memory_order_acquire);
  if (r != nullptr) Ring::counter(r->header()->cupti_dropped).fetch_add(n);
}

void add_loss(uint64_t format::LossCounts::*counter, uint64_t n) noexcept {
  RecorderInstance* r = g_recorder.load(std::memory_order_acquire);
  if (r != nullptr && n > 0)
    std::atomic_ref<uint64_t>(r->header()->losses.*counter).fetch_add(n, std::memory_order_relaxed);
}

void set_timing_mode(uint32_t mode) noexcept {
  RecorderInstance* r = g_recorder.load(std::memory_order_acquire);
  if (r != nullptr) std::atomic_ref<uint32_t>(r->header()->mode).store(mode);
}

void set_kernel_filter(uint32_t code) noexcept {
  RecorderInstance* r = g_recorder.load(std::memory_order_acquire);
  if (r != nullptr) std::atomic_ref<uint32_t>(r->header()->kernel_filter).store(code);
}

const InFlightCall& in_flight_call() noexcept {
  return t_in_flight;
}

// Not in recorder.h: the wrappers' write access to the thread's in-flight call.
InFlightCall& mutable_in_flight_call() noexcept {
  return t_in_flight;
}

void set_call_observer(CallObserver* observer) noexcept {
  g_observer.store(observer, std::memory_order_release);
}

CallObserver* call_observer() noexcept {
  return g_observer.load(std::memory_order_acquire);
}

void note_communicator(int rank, int nranks, int device) noexcept {
  pthread_mutex_lock(&g_mutex);
  RecorderInstance* r = g_recorder.load();
  if (r != nullptr && !g_identity_from_comm_done) {
    g_identity_from_comm_done = true;
    const format::ProcessInfo& p = r->header()->process;
    if (p.rank < 0) {
      r->set_identity(rank, nranks, p.local_rank, device, format::RankSource::kFirstComm);
    } else {
      r->set_identity(p.rank, p.world_size >= 0 ? p.world_size : nranks, p.local_rank, device,
                      format::RankSource::kEnv);
    }
  }
  pthread_mutex_unlock(&g_mutex);
}

void finish_recorder() noexcept {
  pthread_mutex_lock(&g_mutex);
  finish_locked(false);
  g_identity_from_comm_done = false;
  pthread_mutex_unlock(&g_mutex);
}

std::string current_trace_path() {
  RecorderInstance* r = g_recorder.load();
  return r != nullptr ? r->trace_path() : std::string();
}

uint64_t pending_records() noexcept {
  RecorderInstance* r = g_recorder.load();
  return r != nullptr ? r->ring().pending() : 0;
}

std::string current_segment_name() {
  RecorderInstance* r = g_recorder.load();
  return r != nullptr ? r->segment_name() : std::string();
}

}  // namespace ncclwatch::shim

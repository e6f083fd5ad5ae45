// Everything the shim does to the process environment happens here, in the library's load-time
// constructor: before main, while the process has a single thread. After load the shim only
// reads the environment: glibc's setenv may reallocate or free the array that a concurrent
// getenv in another application thread (PyTorch, NCCL, CUDA all call it) is walking, and that
// thread dies with SIGSEGV.
//
// The settings (every NCCLWATCH_* variable, settings.h) are read here too, once: the recorder,
// the GPU timeline and the clock use this snapshot.
//
// Cheap and inert for processes that never call NCCL: a few getenv, getcwd and gethostname and one
// atexit registration, no file, directory or segment (those come at the first NCCL call).
#include <cstdlib>

#include "record/clock.h"
#include "record/nccl_log_capture.h"
#include "record/recorder_control.h"
#include "record/settings.h"

namespace ncclwatch::shim {
namespace {

// NVTX ranges reach CUPTI only when NVTX loads CUPTI as its injection library, which it does at
// the application's first NVTX call, long before the shim starts CUPTI. When the user named the
// CUPTI to use (NCCLWATCH_CUPTI), point NVTX at that same library; guessing one here could load a
// second, different CUPTI next to the application's own. NCCLWATCH_NVTX=off leaves NVTX alone.
void route_nvtx_to_cupti(const Settings& config) {
  if (config.cupti.empty() || !config.nvtx) return;
  setenv("NVTX_INJECTION64_PATH", config.cupti.c_str(), 0);  // never overrides the user's own
}

__attribute__((constructor)) void set_up_environment_at_load() {
  try {
    remember_start_dir();
    load_settings(&process_env);
    const Settings& config = settings();
    set_clock_test_offset_ns(config.test_clock_offset_ns);
    // NCCL reads these at its own initialisation, which is after main started; the trace dir
    // is the one the recorder will use (the same snapshot).
    prepare_nccl_logging(config.enabled ? config.dir.c_str() : nullptr, config.host.c_str(),
                         config.inherited_nccl_env ? config.inherited_nccl_env->c_str() : nullptr);
    route_nvtx_to_cupti(config);
    // Registered first, run (nearly) last: NCCL calls in the application's atexit handlers and
    // static destructors are still recorded. Does nothing in a process that never called NCCL.
    install_exit_flush();
  } catch (...) {
    // Out of memory before main: the recorder reports its own failures at the first NCCL call.
  }
}

}  // namespace
}  // namespace ncclwatch::shim

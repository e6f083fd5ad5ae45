// Everything the shim does to the process environment happens here, in the library's load-time
// constructor: before main, while the process has a single thread. After load the shim only
// reads the environment: glibc's setenv may reallocate or free the array that a concurrent
// getenv in another application thread (PyTorch, NCCL, CUDA all call it) is walking, and that
// thread dies with SIGSEGV.
//
// Cheap and inert for processes that never call NCCL: a few getenv, getcwd and gethostname and one
// atexit registration, no file, directory or segment (those come at the first NCCL call).
#include <string>

#include "record/nccl_log_capture.h"
#include "record/recorder_control.h"
#include "record/settings.h"

namespace ncclwatch::shim {
namespace {

__attribute__((constructor)) void set_up_environment_at_load() {
  try {
    remember_start_dir();
    Settings settings = read_settings(&process_env, /*warn=*/false);
    // NCCL reads these at its own initialisation, which is after main started; the trace dir
    // is the one the recorder will use (same settings, same start directory).
    prepare_nccl_logging(settings.enabled ? settings.dir.c_str() : nullptr);
    if (settings.enabled) note_nccl_log_dir(settings.dir);
    // Registered first, run (nearly) last: NCCL calls in the application's atexit handlers and
    // static destructors are still recorded. Does nothing in a process that never called NCCL.
    install_exit_flush();
  } catch (...) {
    // Out of memory before main: the recorder reports its own failures at the first NCCL call.
  }
}

}  // namespace
}  // namespace ncclwatch::shim

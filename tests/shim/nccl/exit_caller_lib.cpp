// A library whose constructor registers an atexit handler that calls NCCL (found by name), for
// the exit tests: initialised before the shim, its handler runs after the shim's exit flush, so
// its call cannot be recorded and must be reported in one line instead of silently lost.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

namespace {

void call_nccl_late() {
  using GetId = ncclResult_t (*)(ncclUniqueId*);
  auto get_id = reinterpret_cast<GetId>(dlsym(RTLD_DEFAULT, "ncclGetUniqueId"));
  ncclUniqueId id{};
  int rc = get_id != nullptr ? get_id(&id) : -1;
  std::printf("late call: %d\n", rc);
  std::fflush(stdout);
}

__attribute__((constructor)) void register_late_call() {
  std::atexit(&call_nccl_late);
}

}  // namespace

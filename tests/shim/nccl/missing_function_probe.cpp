// Probe for the missing-function test: a client that looks up a newer NCCL function by name, as
// PyTorch does for ncclCommShrink, in a process whose NCCL lacks it (here: no NCCL at all). Under
// the shim the lookup finds the shim's wrapper; calling it must give ncclInternalError and one
// `ncclwatch:` line, never a crash. Prints "found <rc>" or "absent".
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>

int main() {
  using Shrink = ncclResult_t (*)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
  auto shrink = reinterpret_cast<Shrink>(dlsym(RTLD_DEFAULT, "ncclCommShrink"));
  if (shrink == nullptr) {
    std::printf("absent\n");
    return 0;
  }
  ncclComm_t out = nullptr;
  int first = shrink(nullptr, nullptr, 0, &out, nullptr, 0);
  int second = shrink(nullptr, nullptr, 0, &out, nullptr, 0);
  std::printf("found %d %d\n", first, second);
  return 0;
}

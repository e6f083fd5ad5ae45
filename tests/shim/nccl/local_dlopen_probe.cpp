// Probe for the preload tests: loads libnccl with dlopen(RTLD_LOCAL) after start-up (as Python
// loads PyTorch), then calls NCCL through the global scope, i.e. through the preloaded wrappers,
// which must find the real functions although RTLD_NEXT cannot see a local library.
// Prints "ok" and exits 0 when every call succeeded.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) == nullptr) {
    std::printf("dlopen: %s\n", dlerror());
    return 3;
  }
  using GetId = ncclResult_t (*)(ncclUniqueId*);
  using Init = ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int);
  using AllReduce = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);
  using Destroy = ncclResult_t (*)(ncclComm_t);
  auto get_id = reinterpret_cast<GetId>(dlsym(RTLD_DEFAULT, "ncclGetUniqueId"));
  auto init = reinterpret_cast<Init>(dlsym(RTLD_DEFAULT, "ncclCommInitRank"));
  auto all_reduce = reinterpret_cast<AllReduce>(dlsym(RTLD_DEFAULT, "ncclAllReduce"));
  auto destroy = reinterpret_cast<Destroy>(dlsym(RTLD_DEFAULT, "ncclCommDestroy"));
  if (!get_id || !init || !all_reduce || !destroy) {
    std::printf("wrappers not in the global scope (is libncclwatch.so preloaded?)\n");
    return 4;
  }
  ncclUniqueId id{};
  ncclComm_t comm = nullptr;
  float buf[4] = {};
  int r1 = get_id(&id);
  int r2 = init(&comm, 1, id, 0);
  int r3 = all_reduce(buf, buf, 4, ncclFloat32, ncclSum, comm, nullptr);
  int r4 = destroy(comm);
  std::printf("%s %d %d %d %d\n", r1 || r2 || r3 || r4 ? "failed" : "ok", r1, r2, r3, r4);
  return r1 || r2 || r3 || r4 ? 1 : 0;
}

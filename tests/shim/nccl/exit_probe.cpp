// Probe for the exit tests: a program linked against (fake) NCCL, run with the shim preloaded.
//
//   exit_probe quick     one NCCL call, then exit (how long exit takes)
//   exit_probe atexit    registers an atexit handler before its first NCCL call (so before the
//                        shim's recorder exists) that creates and destroys a communicator; then
//                        one NCCL call and exit. The handler's calls must be recorded.
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

void nccl_at_exit() {
  ncclUniqueId id{};
  ncclComm_t comm = nullptr;
  int r1 = ncclGetUniqueId(&id);
  int r2 = ncclCommInitRank(&comm, 1, id, 0);
  int r3 = r2 == 0 ? ncclCommDestroy(comm) : 0;
  std::printf("atexit handler: %d %d %d\n", r1, r2, r3);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::string_view mode = argv[1];
  if (mode == "atexit")
    std::atexit(&nccl_at_exit);
  else if (mode != "quick")
    return 2;
  ncclUniqueId id{};
  return ncclGetUniqueId(&id) == ncclSuccess ? 0 : 1;
}

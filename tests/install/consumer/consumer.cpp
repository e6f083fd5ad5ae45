// Reads nothing, checks what an installed package must give a consumer: the record format header
// (its sizes and version constants) and the paths of the CLI and the preload library.
#include <ncclwatch/format.h>

#include <cstdio>
#include <filesystem>

static_assert(sizeof(ncclwatch::format::Record) == 64, "records are one cache line");

int main() {
  namespace fs = std::filesystem;
  if (!fs::exists(NCCLWATCH_CLI) || !fs::exists(NCCLWATCH_SHIM)) {
    std::fprintf(stderr, "consumer: missing %s or %s\n", NCCLWATCH_CLI, NCCLWATCH_SHIM);
    return 1;
  }
  std::printf("cli=%s\nshim=%s\nlayout_version=%u\n", NCCLWATCH_CLI, NCCLWATCH_SHIM,
              static_cast<unsigned>(ncclwatch::format::kLayoutVersion));
  return 0;
}

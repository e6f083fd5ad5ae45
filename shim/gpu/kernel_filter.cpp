#include "kernel_filter.h"

#include <cstdlib>
#include <cstring>

namespace ncclwatch::shim::gpu {

bool is_nccl_kernel_name(const char* name) noexcept {
  if (name == nullptr) return false;
  // Mangled C++ names start with _Z<len>: skip to the identifier.
  if (name[0] == '_' && name[1] == 'Z') {
    name += 2;
    while (*name >= '0' && *name <= '9') ++name;
  }
  return std::strncmp(name, "ncclKernel", 10) == 0 ||
         std::strncmp(name, "ncclDevKernel", 13) == 0 || std::strncmp(name, "ncclSymk", 8) == 0;
}

}  // namespace ncclwatch::shim::gpu

#include "kernel_filter.h"

#include <cstdlib>
#include <cstring>

namespace ncclwatch::shim::gpu {

KernelFilter KernelFilter::from_env(const char* value, bool* error) {
  KernelFilter f;
  if (error) *error = false;
  if (value == nullptr || value[0] == '\0' || std::strcmp(value, "all") == 0) return f;
  if (std::strcmp(value, "nccl") == 0) {
    f.policy_ = Policy::kNccl;
    return f;
  }
  if (std::strncmp(value, "sampled:", 8) == 0) {
    char* end = nullptr;
    long n = std::strtol(value + 8, &end, 10);
    if (end != value + 8 && *end == '\0' && n >= 1 && n <= 1000000) {
      f.policy_ = n == 1 ? Policy::kAll : Policy::kSampled;
      f.every_ = static_cast<uint32_t>(n);
      return f;
    }
  }
  if (error) *error = true;
  return f;
}

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

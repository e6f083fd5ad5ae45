#include "library_finder.h"

#include <dirent.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "record/settings.h"

namespace ncclwatch::shim::gpu {
namespace {

struct Search {
  const char* prefix;
  std::string found;
};

int visit(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  const char* base = std::strrchr(info->dlpi_name, '/');
  base = base ? base + 1 : info->dlpi_name;
  if (std::strncmp(base, search->prefix, std::strlen(search->prefix)) == 0) {
    search->found = info->dlpi_name;
    return 1;
  }
  return 0;
}

std::string folder_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Every "libcupti.so*" in `dir`, the unversioned name first (it is what the toolkit points at
// the current version).
void add_cupti_in(const std::string& dir, std::vector<std::string>& out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "libcupti.so", 11) == 0) names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) out.push_back(dir + "/" + n);
}

}  // namespace

std::string loaded_library(const char* prefix) {
  Search search{prefix, {}};
  dl_iterate_phdr(visit, &search);
  return search.found;
}

bool process_uses_cuda() {
  return !loaded_library("libcudart.so").empty() || !loaded_library("libcuda.so").empty();
}

std::vector<std::string> cupti_candidates() {
  std::vector<std::string> out;
  if (const std::string& chosen = settings().cupti; !chosen.empty()) {
    out.push_back(chosen);
    return out;  // an explicit choice is not second-guessed
  }
  if (auto loaded = loaded_library("libcupti.so"); !loaded.empty()) out.push_back(loaded);
  if (auto cudart = loaded_library("libcudart.so"); !cudart.empty()) {
    std::string dir = folder_of(cudart);
    add_cupti_in(dir, out);
    add_cupti_in(dir + "/../../cuda_cupti/lib", out);   // pip: nvidia/cuda_runtime/lib
    add_cupti_in(dir + "/../extras/CUPTI/lib64", out);  // toolkit layout
  }
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && home[0] != '\0') {
    add_cupti_in(std::string(home) + "/extras/CUPTI/lib64", out);
    add_cupti_in(std::string(home) + "/lib64", out);
  }
  add_cupti_in("/usr/local/cuda/extras/CUPTI/lib64", out);
  add_cupti_in("/usr/local/cuda/lib64", out);
  out.emplace_back("libcupti.so");
  return out;
}

}  // namespace ncclwatch::shim::gpu

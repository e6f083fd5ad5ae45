// The hook table against the real nccl.h: this file does not compile if any prototype in
// shim/nccl/nccl_hooks.def differs from NCCL's (both the weak nccl<X> and the strong pnccl<X>).
// At run time: the table covers exactly format::Func's API entries, and libncclwatch.so needs
// no CUDA/NCCL library and exports nothing but the wrapped functions.
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdio>
#include <set>
#include <string>
#include <type_traits>

#include "nccl/hooks.h"

#define NCCLWATCH_HOOK(name, params, args)                                         \
  static_assert(std::is_same_v<ncclwatch::shim::Fn##name, decltype(&nccl##name)>,  \
                "nccl" #name ": prototype in nccl_hooks.def differs from nccl.h"); \
  static_assert(std::is_same_v<ncclwatch::shim::Fn##name, decltype(&pnccl##name)>, \
                "pnccl" #name ": prototype in nccl_hooks.def differs from nccl.h");
#include "nccl/nccl_hooks.def"
#undef NCCLWATCH_HOOK

namespace {

using ncclwatch::format::Func;

TEST(HookTable, CoversEveryApiFunctionOnce) {
  std::set<int> funcs;
  std::set<std::string> names;
#define NCCLWATCH_HOOK(name, params, args)       \
  funcs.insert(static_cast<int>(Func::k##name)); \
  names.insert(#name);
#include "nccl/nccl_hooks.def"
#undef NCCLWATCH_HOOK
  EXPECT_EQ(funcs.size(), names.size());
  for (int f = static_cast<int>(Func::kAllReduce); f < static_cast<int>(Func::kCount); ++f) {
    EXPECT_TRUE(funcs.count(f)) << "format::Func " << f << " has no hook";
  }
  EXPECT_EQ(funcs.size(), static_cast<size_t>(Func::kCount) - 1);
}

std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(SharedLibrary, LinksNoCudaOrNccl) {
  std::string dyn = run("readelf -d '" NCCLWATCH_SHIM_LIB "'");
  ASSERT_NE(dyn.find("NEEDED"), std::string::npos) << "readelf failed: " << dyn;
  std::string needed;  // only the NEEDED entries (the SONAME itself says "libncclwatch")
  for (size_t pos = dyn.find("(NEEDED)"); pos != std::string::npos;
       pos = dyn.find("(NEEDED)", pos + 1)) {
    needed += dyn.substr(pos, dyn.find('\n', pos) - pos) + "\n";
  }
  for (const char* lib : {"libnccl", "libcudart", "libcupti", "libcuda."}) {
    EXPECT_EQ(needed.find(lib), std::string::npos) << lib << " in\n" << needed;
  }
}

TEST(SharedLibrary, ExportsOnlyWrappedFunctions) {
  std::string syms = run("nm -D --defined-only '" NCCLWATCH_SHIM_LIB "'");
  ASSERT_FALSE(syms.empty());
  size_t lines = 0, start = 0;
  std::set<std::string> exported;
  while (start < syms.size()) {
    size_t end = syms.find('\n', start);
    std::string line = syms.substr(start, end - start);
    start = end == std::string::npos ? syms.size() : end + 1;
    if (line.empty()) continue;
    ++lines;
    std::string name = line.substr(line.rfind(' ') + 1);
    exported.insert(name);
    // The GPU part may export its own interposers (cuda*/cu*/nvtx*); never C++ symbols.
    EXPECT_NE(name.rfind("_Z", 0), 0u) << "C++ symbol exported: " << name;
  }
#define NCCLWATCH_HOOK(name, params, args) \
  EXPECT_TRUE(exported.count("nccl" #name)) << "nccl" #name " not exported";
#include "nccl/nccl_hooks.def"
#undef NCCLWATCH_HOOK
  EXPECT_GE(lines, 24u);
}

}  // namespace

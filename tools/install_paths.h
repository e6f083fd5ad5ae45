// Where the CLI finds what was installed with it, relative to its own executable: the same rule
// in a build tree (build/tools/ncclwatch) and in an installed prefix (<prefix>/bin/ncclwatch).
// The relative paths come from CMake (GNUInstallDirs), see tools/CMakeLists.txt.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "ncclwatch/settings_table.h"

namespace ncclwatch::tools {

inline std::filesystem::path executable_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

// libncclwatch.so: NCCLWATCH_LIB, else next to this executable: <prefix>/<libdir> when installed,
// <build>/lib in a build tree. "" when not found; `tried` lists the places looked at.
inline std::string find_shim_library(std::string& tried) {
  const char* v = std::getenv(settings::name(settings::Id::kLib));
  if (v != nullptr && *v != '\0') return v;
  const std::filesystem::path bin = executable_dir();
  if (bin.empty()) return "";
  std::error_code ec;
  for (const std::filesystem::path& p :
       {bin / NCCLWATCH_LIBDIR_FROM_BINDIR / "libncclwatch.so", bin / "../lib/libncclwatch.so",
        bin / "../lib64/libncclwatch.so", bin / "libncclwatch.so"}) {
    tried += (tried.empty() ? "" : ", ") + p.lexically_normal().string();
    if (std::filesystem::exists(p, ec))
      return std::filesystem::absolute(p, ec).lexically_normal().string();
  }
  return "";
}

// The private directory of `ncclwatch demo` (the stand-in launcher, programs and libraries):
// <prefix>/<libexecdir>/ncclwatch/demo, or the same place relative to build/tools.
inline std::string demo_directory() {
  const std::filesystem::path bin = executable_dir();
  if (bin.empty()) return "";
  return (bin / NCCLWATCH_DEMO_FROM_BINDIR).lexically_normal().string();
}

}  // namespace ncclwatch::tools

#include "analysis/units.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/func_names.h"

namespace ncclwatch::analysis {

std::string human_time(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.0f} µs", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string signed_time(double ns) {
  return (ns >= 0 ? "+" : "") + human_time(ns);
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return v >= 10 ? fmt::format("{:.0f} {}", v, units[u]) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string func_name(format::Func f) {
  // Prose spelling of the one name table (model/func_names.h): "all_reduce" -> "all-reduce";
  // ncclBcast is a broadcast; anything but a collective or send/recv is "collective".
  if (!format::is_collective(f) && !format::is_p2p(f)) return "collective";
  std::string name = model::func_name(f == format::Func::kBcast ? format::Func::kBroadcast : f);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

}  // namespace ncclwatch::analysis

#include "analysis/units.h"

#include <cmath>

#include <fmt/format.h>

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
  switch (f) {
    case format::Func::kAllReduce:
      return "all-reduce";
    case format::Func::kBroadcast:
    case format::Func::kBcast:
      return "broadcast";
    case format::Func::kReduce:
      return "reduce";
    case format::Func::kAllGather:
      return "all-gather";
    case format::Func::kReduceScatter:
      return "reduce-scatter";
    case format::Func::kAlltoAll:
      return "all-to-all";
    case format::Func::kGather:
      return "gather";
    case format::Func::kScatter:
      return "scatter";
    case format::Func::kSend:
      return "send";
    case format::Func::kRecv:
      return "recv";
    default:
      break;
  }
  return "collective";
}

}  // namespace ncclwatch::analysis

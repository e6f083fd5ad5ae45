// Human units for report lines: one rule for every analysis, so figures read the same.
#pragma once

#include <cstdint>
#include <string>

#include "model/rank_trace.h"

namespace ncclwatch::analysis {

// "8.1 ms", "350 µs", "12 ns", "1.20 s".
std::string human_time(double ns);
// "+8.1 ms", "-350 µs": a signed difference.
std::string signed_time(double ns);
// "64 MiB", "25 KiB", "512 B".
std::string human_bytes(uint64_t bytes);
// Prose spelling of model::func_name (the one table): "all-reduce", "all-gather", "send", ...
// ("collective" for anything but a collective or send/recv).
std::string func_name(format::Func f);

}  // namespace ncclwatch::analysis

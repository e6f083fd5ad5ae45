// `ncclwatch dump FILE`: every record of a trace file as one JSON object per line, names
// resolved, and a summary (plus every problem) on the error stream.
#pragma once

#include <cstdio>
#include <optional>
#include <set>
#include <string>

#include "ncclwatch/format.h"

namespace ncclwatch::trace {

struct DumpOptions {
  std::set<format::RecordKind> kinds;  // empty: every kind (invalid records included)
  bool header = false;                 // first line: the file header as a JSON object
};

// "call,kernel" -> kinds; nullopt and `error` set for an unknown name.
std::optional<std::set<format::RecordKind>> parse_kinds(const std::string& csv, std::string& error);

// Returns the exit code: 0 printed (problems are reported but valid records still printed),
// 1 the file cannot be read at all.
int dump_trace(const std::string& path, const DumpOptions& options, std::FILE* out, std::FILE* err);

}  // namespace ncclwatch::trace

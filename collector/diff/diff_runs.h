// `ncclwatch diff BASE NEW [--json FILE] [--html FILE]`: the whole command behind the CLI, kept
// here so that tests reach it. Exit codes (README, "Exit codes"): 0 no significant change (or
// NEW is faster), 3 NEW's step time is longer beyond the runs' noise, 1 an input unusable or an
// output not written.
#pragma once

#include <cstdio>
#include <string>

namespace ncclwatch::diff {

struct DiffRequest {
  std::string base, now;  // each: a report JSON, or an input `ncclwatch report` reads
  std::string json_path;  // "" = no JSON (docs/diff.md)
  std::string html_path;  // "" = no page
  bool progress = true;   // progress lines on `err` once loading takes > 1 s
};

enum class DiffStatus : int {
  kNoRegression = 0,
  kError = 1,
  kRegression = 3,
};

DiffStatus diff_runs(const DiffRequest& request, std::FILE* out, std::FILE* err);

}  // namespace ncclwatch::diff

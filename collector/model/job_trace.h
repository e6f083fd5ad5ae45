// All ranks of one job, plus what the readers had to say about their input.
#pragma once

#include <string>
#include <vector>

#include "model/rank_trace.h"

namespace ncclwatch::model {

// A problem with the input, reported in one line and otherwise skipped.
struct InputProblem {
  std::string source;   // file or segment
  std::string message;  // "truncated after 1234 records", "bad magic", ...
};

struct JobTrace {
  std::string job;
  std::vector<RankTrace> ranks;  // sorted by global rank (unknown ranks last)
  std::vector<InputProblem> problems;
  // What a reader did that the report's reader should know and that is no problem with the
  // input (how ranks were numbered, what a conversion left out): info lines in the report.
  std::vector<InputProblem> notes;
};

}  // namespace ncclwatch::model

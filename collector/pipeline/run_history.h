// The history and capture windows of a loaded ncclwatch job (docs/always-on.md, "The report of a
// long run"), for report_job: the step summaries are streamed from the ranks' trace files again
// (the loader does not keep them: a long run's summaries would outweigh its windows' detail), or
// taken from memory when every rank is one whole-run window (the loader kept them then); the
// windows come from the loaded ranks' window marks. Traces without windows (layout versions 1-4)
// are not read again.
#pragma once

#include <string>
#include <vector>

#include "history/capture_windows.h"
#include "history/history.h"
#include "model/job_trace.h"

namespace ncclwatch::pipeline {

struct RunHistory {
  history::History history;
  std::vector<history::CaptureWindow> windows;  // oldest first
  std::vector<std::string> problems;            // files whose summaries could not be read
};

// `dir`: the trace directory `job` was loaded from (its ranks' trace parts are found again there).
RunHistory read_run_history(const model::JobTrace& job, const std::string& dir);

}  // namespace ncclwatch::pipeline

// `ncclwatch report` and `ncclwatch run` end the same way: load the job (trace directory or Kineto
// traces), run the pipeline, print the report, write the JSON. Kept here, not in tools/, so that
// tests reach it.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace ncclwatch::pipeline {

struct ReportRequest {
  std::string dir;                     // ncclwatch trace directory ("" when only Kineto files)
  std::string job;                     // "" = the job with most ranks in dir
  std::string json_path;               // "" = no JSON file
  std::vector<std::string> kineto;     // PyTorch-profiler traces (files or directories)
  std::vector<std::string> nccl_logs;  // extra NCCL_DEBUG logs for the topology check
  bool progress = true;                // progress lines on `err` once loading takes > 1 s
};

// Returns 0 when a report was printed (findings or not), 2 when there was nothing to report on
// (one line on `err` says why), 1 when the JSON file could not be written.
int report_job(const ReportRequest& request, std::FILE* out, std::FILE* err);

}  // namespace ncclwatch::pipeline

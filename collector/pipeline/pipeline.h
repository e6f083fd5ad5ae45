// The collector's pipeline: one JobTrace in, the whole Report out. Links GPU work to calls
// (collector/timeline), matches instances across ranks, aligns clocks, writes the collector's own
// findings, sections and JSON, then runs the analyses and the topology check where those parts
// are built in, and ends with the input problems.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "clock/clock_aligner.h"
#include "match/matcher.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"
#include "model/report.h"

namespace ncclwatch::pipeline {

struct PipelineOptions {
  match::MatchOptions match;
  clock::ClockOptions clock;
  bool link_gpu = true;  // run the GPU linker (off when the reader already linked, e.g. Kineto)
  bool analyses = true;
  unsigned threads = 0;      // GPU linking and the analyses use this many threads (0: one per core)
  std::string topology_dir;  // where to look for NCCL logs/dumps (usually the trace dir); "" = none
  std::vector<std::string> topology_logs;  // extra NCCL log files
  // Where Python stacks saved by `status --stacks` / `run` are (the trace dir); "" = none.
  std::string stack_dir;
  std::size_t max_rank_rows = 32;  // per-rank table rows before it is summarised
  // Called at the start of each stage ("matching", "clocks", ...); the CLI shows it when slow.
  std::function<void(const char* stage)> progress;
};

struct PipelineResult {
  model::Report report;
  model::MatchResult match;
  model::ClockAlignment clock;
};

// `job` is not const: the GPU linker fills CallEvent::kernel/gpu_*.
PipelineResult run_pipeline(model::JobTrace& job, const PipelineOptions& options = {});

inline model::Report build_report(model::JobTrace& job, const PipelineOptions& options = {}) {
  return run_pipeline(job, options).report;
}

}  // namespace ncclwatch::pipeline

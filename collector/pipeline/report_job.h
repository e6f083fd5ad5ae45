// `ncclwatch report` and `ncclwatch run` end the same way: load the job (trace directory or Kineto
// traces, one loader interface: pipeline/job_input.h), run the pipeline, print the report, write
// the JSON. Kept here, not in tools/, so that tests reach it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/job_input.h"
#include "pipeline/pipeline.h"

namespace ncclwatch::pipeline {

struct ReportRequest {
  // What to report on: an ncclwatch trace directory, or PyTorch-profiler (Kineto) trace files or
  // directories; the kind is told from the content (pipeline/job_input.h). `run` gives its
  // trace directory as `dir`, which is the same as inputs = {dir}.
  std::string dir;
  std::vector<std::string> inputs;
  std::vector<std::string> kineto;     // --kineto: Kineto traces, the kind forced
  std::string job;                     // "" = the job with most ranks in the directory
  std::string json_path;               // "" = no JSON file
  std::vector<std::string> nccl_logs;  // extra NCCL_DEBUG logs for the topology check
  uint64_t max_inflate_ratio = 100;    // a .gz Kineto trace inflates at most this x its size
  bool progress = true;                // progress lines on `err` once loading takes > 1 s
  std::string trace_path;              // "" = no Chrome-trace export (--trace)
  std::string steps;                   // "A:B": only these steps in the trace export ("" = all)
  std::string html_path;               // "" = no HTML page (--html)
  // Not "" for a job of `ncclwatch demo`: the line that says the job is SIMULATED and what it
  // injects, the first info finding (text, JSON, page), the JSON's and the exported timeline's
  // "simulated". "": the job id of ncclwatch traces decides (demo::simulated_line_of_job).
  std::string simulated;
  // The pattern finding's sparkline in Unicode blocks (true) or ASCII; unset: Unicode when the
  // locale is UTF-8 (report::locale_is_utf8).
  std::optional<bool> unicode;
  // --window N: only capture window N (1-based, oldest first) of a run with capture windows;
  // 0: every window, newest first (docs/always-on.md, "The report of a long run").
  std::size_t window = 0;
};

// What report_job returns; the values are the CLI's exit codes (README, "Exit codes").
enum class ReportStatus : int {
  kClean = 0,     // a report was printed; no finding at warning level or worse
  kError = 1,     // nothing to report on, or the report or a requested output (--json, --html,
                  // --trace) could not be written (one line on `err` naming it)
  kUsage = 2,     // a value that does not fit the job (--steps beyond its last step); one line
  kFindings = 3,  // a report was printed with a finding at warning level or worse
};

// No rank trace at all in `dir` (of `job`, when given): the job made no NCCL call under the shim.
bool no_rank_traces(const std::string& dir);

using Show = std::function<void(const std::string&)>;  // a progress line

ReportStatus report_job(const ReportRequest& request, std::FILE* out, std::FILE* err);

// What `report` would write with --json for `req`, and the kind of input it read: what
// `ncclwatch diff` compares for an input that is not a report JSON already, so that comparing two
// inputs and comparing their `report --json` files is one thing (a run with capture windows: the
// window `report` shows first, with the run's history). `progress` shows the progress lines (the
// request's own are off). nullopt after a line on `err` when `report` would fail.
struct ReportDocument {
  InputKind kind = InputKind::kNcclwatch;
  nlohmann::json json;
};
std::optional<ReportDocument> report_document(const ReportRequest& req, std::FILE* err,
                                              const Show& progress);

}  // namespace ncclwatch::pipeline

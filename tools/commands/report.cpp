// `ncclwatch report DIR|KINETO... [--job ID] [--json FILE] [--html FILE] [--trace FILE
// [--steps A:B]] [--window N] [--kineto FILE...] [--nccl-log FILE...]`: the report of a finished
// (or salvaged) job from its trace directory, or from PyTorch-profiler traces or Nsight Systems
// exports (told apart by content; Kineto forced with --kineto); --trace also writes the merged
// timeline (collector/export).
#include <memory>

#include "command.h"
#include "pipeline/report_job.h"
#include "steps_option.h"

namespace {

ncclwatch::tools::Command report_command{
    "report", [](CLI::App& app, int& exit_code) {
      auto req = std::make_shared<ncclwatch::pipeline::ReportRequest>();
      CLI::App* sub =
          app.add_subcommand("report", "Merge a job's rank traces and print the report");
      sub->add_option("inputs", req->inputs,
                      "Trace directory (NCCLWATCH_DIR of the job), PyTorch-profiler (Kineto) "
                      "traces or Nsight Systems exports (.sqlite, .nsys-rep), files or "
                      "directories: the kind is told from the content");
      sub->add_option("--job", req->job, "Job id, when the directory holds several jobs");
      sub->add_option("--json", req->json_path,
                      "Also write the report as JSON (docs/report-schema.md)");
      sub->add_option("--kineto", req->kineto,
                      "Read these as PyTorch-profiler (Kineto) traces, whatever they hold")
          ->expected(1, -1);
      sub->add_option("--nccl-log", req->nccl_logs, "NCCL_DEBUG=INFO logs for the topology check")
          ->expected(1, -1);
      sub->add_option("--html", req->html_path,
                      "Also write a self-contained HTML report with plots (opens offline)");
      CLI::Option* trace =
          sub->add_option("--trace", req->trace_path,
                          "Also write the merged timeline as Chrome-trace JSON (Perfetto, HTA)");
      sub->add_option("--steps", req->steps,
                      "With --trace: only steps A:B (1-based); a window beyond the job's last "
                      "step is refused")
          ->check(ncclwatch::tools::steps_validator())
          ->needs(trace);
      sub->add_option("--max-inflate-ratio", req->max_inflate_ratio,
                      "A .gz Kineto trace may inflate to at most N times its size (at least "
                      "256 MiB; 0: no bound) -- a gzip bomb is refused as an input problem")
          ->capture_default_str();
      sub->add_option("--window", req->window,
                      "A run with capture windows: report only window N (1 = the oldest; "
                      "default: the history, then every window, newest first)")
          ->check(CLI::PositiveNumber);
      sub->add_flag("!--no-progress", req->progress, "No progress lines on stderr");
      sub->callback([req, &exit_code] {
        if (req->inputs.empty() && req->kineto.empty()) {
          throw CLI::RequiredError("a trace directory or Kineto traces");
        }
        exit_code = static_cast<int>(ncclwatch::pipeline::report_job(*req, stdout, stderr));
      });
    }};

}  // namespace

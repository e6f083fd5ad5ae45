#include "pipeline/report_job.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "demo/scenarios.h"
#include "export/chrome_trace.h"
#include "export/html_report.h"
#include "model/message.h"
#include "model/vocabulary.h"
#include "pipeline/pipeline.h"
#include "report/json_renderer.h"
#include "report/text_renderer.h"

#include "pipeline/job_input.h"
#include "pipeline/progress_line.h"

namespace ncclwatch::pipeline {

namespace {

// The job, from the inputs of the kind their content says (or --kineto's); nullopt after a line
// on `err` when the inputs are missing, unrecognised or mixed.
std::optional<JobInput> load(const ReportRequest& req, model::JobTrace& job,
                             const std::function<void(const std::string&)>& progress,
                             std::FILE* err) {
  std::vector<std::string> paths = req.inputs;
  if (!req.dir.empty()) paths.insert(paths.begin(), req.dir);
  if (!paths.empty() && !req.kineto.empty()) {
    model::say(err, "give trace inputs or --kineto files, not both");
    return std::nullopt;
  }
  std::optional<JobInput> input;
  std::string error;
  if (!req.kineto.empty()) {
    input = JobInput{InputKind::kKineto, req.kineto};
  } else if (input = detect_job_input(paths, error); !input) {
    model::say(err, error);
    return std::nullopt;
  }
  JobLoadSettings settings;
  settings.job = req.job;
  settings.max_inflate_ratio = req.max_inflate_ratio;
  settings.progress = progress;
  job = load_job_input(*input, settings);
  return input;
}

}  // namespace

std::optional<AnalysedJob> analyse_job(const ReportRequest& req, std::FILE* err,
                                       const std::function<void(const std::string&)>& progress) {
  AnalysedJob out;
  const std::optional<JobInput> input = load(req, out.job, progress, err);
  if (!input) return std::nullopt;
  out.kind = input->kind;
  out.paths = input->paths;
  const bool ncclwatch_traces = input->kind == InputKind::kNcclwatch;
  if (out.job.ranks.empty()) {
    for (const auto& p : out.job.problems) model::say(err, model::problem_line(p));
    model::say(err,
               fmt::format("no rank traces{} in {}", req.job.empty() ? "" : " of job " + req.job,
                           ncclwatch_traces                    ? input->paths[0]
                           : input->kind == InputKind::kKineto ? "the Kineto files"
                                                               : "the Nsight Systems exports"));
    return std::nullopt;
  }
  PipelineOptions options;
  // NCCL_DEBUG logs next to the traces feed the topology check.
  if (ncclwatch_traces) options.topology_dir = input->paths[0];
  options.topology_logs = req.nccl_logs;
  options.link_gpu = ncclwatch_traces;
  if (progress) options.progress = [&progress](const char* stage) { progress(stage); };
  out.result = run_pipeline(out.job, options);
  return out;
}

bool no_rank_traces(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".trace") return false;
  }
  return true;
}

ReportStatus report_job(const ReportRequest& req, std::FILE* out, std::FILE* err) {
  ReportStatus rc = ReportStatus::kClean;
  exporter::StepWindow steps;  // the CLI checks --steps (a usage error); this is the backstop
  if (!req.steps.empty() && !exporter::StepWindow::parse(req.steps, steps)) {
    std::fprintf(err, "ncclwatch: --steps %s: expected A:B, A: or A (1-based step numbers)\n",
                 req.steps.c_str());
    return ReportStatus::kError;
  }
  {
    ProgressLine progress(err, req.progress);
    std::optional<AnalysedJob> analysed =
        analyse_job(req, err, [&progress](const std::string& line) { progress.show(line); });
    if (!analysed) return ReportStatus::kError;
    model::JobTrace& job = analysed->job;
    PipelineResult& result = analysed->result;
    model::Report& report = result.report;
    // A demo's run says SIMULATED however it is reported: by `ncclwatch demo`, or later from the
    // traces it kept, by the job id every trace header records (never by a file beside them).
    const std::string simulated = !req.simulated.empty() ? req.simulated
                                  : analysed->kind == InputKind::kNcclwatch
                                      ? demo::simulated_line_of_job(job.job)
                                      : std::string();
    if (!simulated.empty()) {
      report.findings.insert(report.findings.begin(), {model::Severity::kInfo, "demo", simulated});
      report.json["simulated"] = simulated;
    }
    progress.show("writing the report");
    if (!req.trace_path.empty()) {
      progress.show("writing the trace");
      exporter::ChromeTraceStats stats;
      std::string error;
      if (exporter::ChromeTraceWriter::write_file(req.trace_path, job, result.match, result.clock,
                                                  steps, stats, error, simulated)) {
        const std::string window =
            steps.first == 0
                ? ""
                : fmt::format(", steps {}-{} of {}", steps.first,
                              steps.last == 0 ? stats.steps_in_job
                                              : std::min<uint64_t>(steps.last, stats.steps_in_job),
                              stats.steps_in_job);
        report.findings.push_back(
            {model::Severity::kInfo, "trace",
             fmt::format("timeline written to {}: {} ranks, {} kernels, {} NCCL calls, {} "
                         "collectives linked across ranks{} (open in ui.perfetto.dev)",
                         req.trace_path, job.ranks.size(), stats.kernels, stats.calls, stats.flows,
                         window)});
      } else if (steps.first > stats.steps_in_job) {
        model::say(err, fmt::format("{}; trace not written", error));
        rc = ReportStatus::kUsage;
      } else {
        model::say(err, fmt::format("trace export: {}", error));
        rc = ReportStatus::kError;
      }
    }
    if (!req.html_path.empty()) {
      progress.show("writing the HTML report");
      std::string error;
      if (exporter::HtmlReport::write_file(req.html_path, report, error)) {
        report.findings.push_back(
            {model::Severity::kInfo, "html",
             fmt::format("report page written to {} (self-contained, opens offline)",
                         req.html_path)});
      } else {
        model::say(err, fmt::format("HTML report: {}", error));
        rc = ReportStatus::kError;
      }
    }
    if (!req.json_path.empty()) {
      std::string error;
      if (!report::write_json(report, req.json_path, error)) {
        model::say(err, fmt::format("JSON report: {}", error));
        rc = ReportStatus::kError;
      }
    }
    report::TextOptions text_options;
    text_options.width = report::output_width(out);
    text_options.unicode = req.unicode.value_or(report::locale_is_utf8());
    std::string text = report::render_text(report, text_options);
    std::fflush(err);
    const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
    if (std::fflush(out) != 0 || !written || std::ferror(out) != 0) {
      std::fprintf(err, "ncclwatch: cannot write the report: %s\n", std::strerror(errno));
      return ReportStatus::kError;
    }
    if (rc == ReportStatus::kClean) {
      for (const model::Finding& f : report.findings) {
        if (f.severity >= model::Severity::kWarning) rc = ReportStatus::kFindings;
      }
    }
  }
  return rc;
}

}  // namespace ncclwatch::pipeline

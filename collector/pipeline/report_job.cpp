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
#include "pipeline/pipeline.h"
#include "report/json_renderer.h"
#include "report/text_renderer.h"

#include "pipeline/job_input.h"

namespace ncclwatch::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

// Progress on stderr, only once the work has taken more than a second: a terminal gets one line
// rewritten in place, a log file a line every few seconds.
class ProgressLine {
 public:
  ProgressLine(std::FILE* err, bool enabled)
      : err_(err), enabled_(enabled), tty_(isatty(fileno(err)) == 1) {}
  ~ProgressLine() {
    if (dirty_) std::fputc('\n', err_);
  }
  void show(const std::string& text) {
    if (!enabled_) return;
    auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (!tty_ && now - last_ < std::chrono::seconds(5)) return;
    last_ = now;
    double s = std::chrono::duration<double>(now - start_).count();
    if (tty_) {
      std::fprintf(err_, "\rncclwatch: %s (%.1f s)\033[K", text.c_str(), s);
      dirty_ = true;
    } else {
      std::fprintf(err_, "ncclwatch: %s (%.1f s)\n", text.c_str(), s);
    }
    std::fflush(err_);
  }

 private:
  std::FILE* err_;
  bool enabled_, tty_, dirty_ = false;
  Clock::time_point start_ = Clock::now(), last_{};
};

// The job, from the inputs of the kind their content says (or --kineto's); nullopt after a line
// on `err` when the inputs are missing, unrecognised or mixed.
std::optional<JobInput> load(const ReportRequest& req, model::JobTrace& job, ProgressLine& progress,
                             std::FILE* err) {
  std::vector<std::string> paths = req.inputs;
  if (!req.dir.empty()) paths.insert(paths.begin(), req.dir);
  if (!paths.empty() && !req.kineto.empty()) {
    std::fprintf(err, "ncclwatch: give trace inputs or --kineto files, not both\n");
    return std::nullopt;
  }
  std::optional<JobInput> input;
  std::string error;
  if (!req.kineto.empty()) {
    input = JobInput{InputKind::kKineto, req.kineto};
  } else if (input = detect_job_input(paths, error); !input) {
    std::fprintf(err, "ncclwatch: %s\n", error.c_str());
    return std::nullopt;
  }
  JobLoadSettings settings;
  settings.job = req.job;
  settings.max_inflate_ratio = req.max_inflate_ratio;
  settings.progress = [&progress](const std::string& line) { progress.show(line); };
  job = load_job_input(*input, settings);
  return input;
}

}  // namespace

bool no_rank_traces(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".trace") return false;
  }
  return true;
}

ReportStatus report_job(const ReportRequest& req, std::FILE* out, std::FILE* err) {
  model::JobTrace job;
  ReportStatus rc = ReportStatus::kClean;
  exporter::StepWindow steps;  // the CLI checks --steps (a usage error); this is the backstop
  if (!req.steps.empty() && !exporter::StepWindow::parse(req.steps, steps)) {
    std::fprintf(err, "ncclwatch: --steps %s: expected A:B, A: or A (1-based step numbers)\n",
                 req.steps.c_str());
    return ReportStatus::kError;
  }
  {
    ProgressLine progress(err, req.progress);
    const std::optional<JobInput> input = load(req, job, progress, err);
    if (!input) return ReportStatus::kError;
    const bool ncclwatch_traces = input->kind == InputKind::kNcclwatch;
    if (job.ranks.empty()) {
      for (const auto& p : job.problems)
        std::fprintf(err, "ncclwatch: %s: %s\n", p.source.c_str(), p.message.c_str());
      std::fprintf(err, "ncclwatch: no rank traces%s in %s\n",
                   req.job.empty() ? "" : (" of job " + req.job).c_str(),
                   ncclwatch_traces                    ? input->paths[0].c_str()
                   : input->kind == InputKind::kKineto ? "the Kineto files"
                                                       : "the Nsight Systems exports");
      return ReportStatus::kError;
    }
    PipelineOptions options;
    // NCCL_DEBUG logs next to the traces feed the topology check.
    if (ncclwatch_traces) options.topology_dir = input->paths[0];
    options.topology_logs = req.nccl_logs;
    options.link_gpu = ncclwatch_traces;
    options.progress = [&progress](const char* stage) { progress.show(stage); };
    PipelineResult result = run_pipeline(job, options);
    model::Report& report = result.report;
    // A demo's run says SIMULATED however it is reported: by `ncclwatch demo`, or later from the
    // traces it kept, by the job id every trace header records (never by a file beside them).
    const std::string simulated = !req.simulated.empty() ? req.simulated
                                  : ncclwatch_traces     ? demo::simulated_line_of_job(job.job)
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

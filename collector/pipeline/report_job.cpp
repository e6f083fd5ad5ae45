#include "pipeline/report_job.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "export/chrome_trace.h"
#include "export/html_report.h"
#include "pipeline/pipeline.h"
#include "report/json_renderer.h"
#include "report/text_renderer.h"

#include "kineto/kineto_loader.h"
#include "trace/job_loader.h"

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

bool load(const ReportRequest& req, model::JobTrace& job, ProgressLine& progress, std::FILE* err) {
  if (!req.dir.empty() && !req.kineto.empty()) {
    std::fprintf(err, "ncclwatch: give a trace directory or --kineto files, not both\n");
    return false;
  }
  if (!req.kineto.empty()) {
    kineto::LoadLimits limits;
    limits.max_inflate_ratio = req.max_inflate_ratio;
    job = kineto::load_job(req.kineto, limits);
    return true;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(req.dir, ec)) {
    std::fprintf(err, "ncclwatch: %s: no such directory\n", req.dir.c_str());
    return false;
  }
  trace::JobLoadOptions options;
  options.job = req.job;
  options.progress = [&progress](const trace::JobLoadProgress& p) {
    progress.show(fmt::format("reading traces: {}/{} files, {} records", p.files_done,
                              p.files_total, p.records_total));
  };
  job = trace::load_job(req.dir, options);
  return true;
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
    if (!load(req, job, progress, err)) return ReportStatus::kError;
    if (job.ranks.empty()) {
      for (const auto& p : job.problems)
        std::fprintf(err, "ncclwatch: %s: %s\n", p.source.c_str(), p.message.c_str());
      std::fprintf(err, "ncclwatch: no rank traces%s in %s\n",
                   req.job.empty() ? "" : (" of job " + req.job).c_str(),
                   req.dir.empty() ? "the Kineto files" : req.dir.c_str());
      return ReportStatus::kError;
    }
    PipelineOptions options;
    options.topology_dir = req.dir;
    options.topology_logs = req.nccl_logs;
    options.link_gpu = req.kineto.empty();
    options.progress = [&progress](const char* stage) { progress.show(stage); };
    PipelineResult result = run_pipeline(job, options);
    model::Report& report = result.report;
    progress.show("writing the report");
    if (!req.trace_path.empty()) {
      progress.show("writing the trace");
      exporter::ChromeTraceStats stats;
      std::string error;
      if (exporter::ChromeTraceWriter::write_file(req.trace_path, job, result.match, result.clock,
                                                  steps, stats, error)) {
        report.findings.push_back(
            {model::Severity::kInfo, "trace",
             fmt::format("timeline written to {}: {} ranks, {} kernels, {} NCCL calls, {} "
                         "collectives linked across ranks{} (open in ui.perfetto.dev)",
                         req.trace_path, job.ranks.size(), stats.kernels, stats.calls, stats.flows,
                         req.steps.empty() ? "" : ", steps " + req.steps)});
      } else {
        std::fprintf(err, "ncclwatch: trace export: %s\n", error.c_str());
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
        std::fprintf(err, "ncclwatch: HTML report: %s\n", error.c_str());
        rc = ReportStatus::kError;
      }
    }
    if (!req.json_path.empty()) {
      std::string error;
      if (!report::write_json(report, req.json_path, error)) {
        std::fprintf(err, "ncclwatch: %s\n", error.c_str());
        rc = ReportStatus::kError;
      }
    }
    std::string text = report::render_text(report);
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

#include "pipeline/report_job.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "demo/scenarios.h"
#include "export/chrome_trace.h"
#include "export/html_report.h"
#include "history/capture_windows.h"
#include "history/history_report.h"
#include "model/message.h"
#include "model/vocabulary.h"
#include "ncclwatch/settings_table.h"
#include "pipeline/pipeline.h"
#include "report/json_renderer.h"
#include "report/text_renderer.h"

#include "pipeline/job_input.h"
#include "pipeline/lean_load.h"
#include "pipeline/progress_line.h"
#include "pipeline/run_history.h"

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
  // Nothing after the analyses needs the GPU records but the timeline export.
  // Its setting `whole` keeps them (the same report: for checking).
  const char* load_mode = std::getenv(settings::name(settings::Id::kReportLoad));
  settings.lean =
      req.trace_path.empty() && (load_mode == nullptr || std::strcmp(load_mode, "whole") != 0);
  job = load_job_input(*input, settings);
  return input;
}

}  // namespace

namespace {

// No rank in the loaded job: the problems and one line on `err`.
void say_no_ranks(const ReportRequest& req, const JobInput& input, const model::JobTrace& job,
                  std::FILE* err) {
  for (const auto& p : job.problems) model::say(err, model::problem_line(p));
  model::say(err, fmt::format("no rank traces{} in {}", req.job.empty() ? "" : " of job " + req.job,
                              input.kind == InputKind::kNcclwatch ? input.paths[0]
                              : input.kind == InputKind::kKineto  ? "the Kineto files"
                                                                  : "the Nsight Systems exports"));
}

PipelineResult analyse(const ReportRequest& req, const JobInput& input, model::JobTrace& job,
                       const std::function<void(const std::string&)>& progress,
                       bool topology = true) {
  const bool ncclwatch_traces = input.kind == InputKind::kNcclwatch;
  PipelineOptions options;
  // NCCL_DEBUG logs next to the traces feed the topology check.
  if (ncclwatch_traces && topology) options.topology_dir = input.paths[0];
  // Python stacks saved by `status --stacks` / `run` for the hang verdict (trace/stack_file.h).
  if (ncclwatch_traces) options.stack_dir = input.paths[0];
  if (topology) options.topology_logs = req.nccl_logs;
  options.link_gpu = ncclwatch_traces;
  if (progress) options.progress = [&progress](const char* stage) { progress(stage); };
  return run_pipeline(job, options);
}

}  // namespace

bool no_rank_traces(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".trace") return false;
  }
  return true;
}

namespace {

// --trace and --html of one analysed job (the whole run, or the window shown first); what they
// wrote is a line among the report's findings.
void write_exports(const ReportRequest& req, const model::JobTrace& job, PipelineResult& result,
                   const exporter::StepWindow& steps, const std::string& simulated,
                   const Show& show, std::FILE* err, ReportStatus& rc) {
  model::Report& report = result.report;
  if (!req.trace_path.empty()) {
    show("writing the trace");
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
    show("writing the HTML report");
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
}

bool warns(const model::Report& r) {
  return std::any_of(r.findings.begin(), r.findings.end(), [](const model::Finding& f) {
    return f.severity >= model::Severity::kWarning;
  });
}

// The JSON file (when asked), the text on `out`, the exit status.
ReportStatus finish(const ReportRequest& req, const model::Report& json_report,
                    const std::string& text, bool warned, ReportStatus rc, std::FILE* out,
                    std::FILE* err, ReportDocument* doc) {
  // What the JSON file holds, read back as `diff` reads a report JSON: invalid UTF-8 (host or
  // kernel names) replaced alike.
  if (doc != nullptr)
    doc->json =
        nlohmann::json::parse(report::render_json(json_report)
                                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!req.json_path.empty()) {
    std::string error;
    if (!report::write_json(json_report, req.json_path, error)) {
      model::say(err, fmt::format("JSON report: {}", error));
      rc = ReportStatus::kError;
    }
  }
  std::fflush(err);
  const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  if (std::fflush(out) != 0 || !written || std::ferror(out) != 0) {
    std::fprintf(err, "ncclwatch: cannot write the report: %s\n", std::strerror(errno));
    return ReportStatus::kError;
  }
  if (rc == ReportStatus::kClean && warned) rc = ReportStatus::kFindings;
  return rc;
}

report::TextOptions text_options(const ReportRequest& req, std::FILE* out) {
  report::TextOptions o;
  o.width = report::output_width(out);
  o.unicode = req.unicode.value_or(report::locale_is_utf8());
  return o;
}

void add_simulated(const std::string& simulated, model::Report& report) {
  if (simulated.empty()) return;
  report.findings.insert(report.findings.begin(), {model::Severity::kInfo, "demo", simulated});
  report.json["simulated"] = simulated;
}

// A run with capture windows and none covering the whole run: the history, then each window's
// full analysis, newest first (or --window N alone). The first window shown and the history are
// one report (their findings together, critical first: a hang stays the first line; the section
// "History" first); the other windows follow, each under its own header. JSON: that report at the
// top level (so `diff` and the HTML page read it as a report), `history` and `windows` (each
// analysed window with its own report) beside it.
ReportStatus report_windows(const ReportRequest& req, const JobInput& input,
                            const model::JobTrace& job, const RunHistory& run,
                            const exporter::StepWindow& steps, const std::string& simulated,
                            const Show& show, std::FILE* out, std::FILE* err,
                            ReportDocument* document) {
  const std::size_t count = run.windows.size();
  if (req.window > count) {
    model::say(err,
               fmt::format("--window {}: the run has {} capture window(s)", req.window, count));
    return ReportStatus::kUsage;
  }
  std::vector<std::size_t> chosen;
  if (req.window > 0) {
    chosen.push_back(req.window - 1);
  } else {
    for (std::size_t i = count; i-- > 0;) chosen.push_back(i);
  }
  const report::TextOptions options = text_options(req, out);
  nlohmann::json windows = nlohmann::json::array();
  for (std::size_t i = 0; i < count; ++i)
    windows.push_back(history::window_json(run.windows[i], i));
  ReportStatus rc = ReportStatus::kClean;
  bool warned = false;
  std::string text, rest;
  model::Report doc;
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    const std::size_t wi = chosen[k];
    const history::CaptureWindow& w = run.windows[wi];
    const std::string title = history::describe_window(w, wi, count) +
                              (wi + 1 == count ? " (newest)" : "") +
                              (w.text.empty() ? std::string() : "\ntriggered by: " + w.text);
    show(fmt::format("analysing capture window {} of {}", wi + 1, count));
    model::JobTrace slice = history::window_job(job, w, wi + 1 == count);
    PipelineResult result;
    if (!slice.ranks.empty()) result = analyse(req, input, slice, show, k == 0);
    model::Report& report = result.report;
    if (slice.ranks.empty())
      report.sections.push_back({"Window", "no rank kept a record of this window\n"});
    add_simulated(simulated, report);
    windows[wi]["report"] = report::render_json(report);
    warned = warned || warns(report);
    if (k > 0) {
      rest += fmt::format("\n======== {}\n", title) + report::render_text(report, options);
      continue;
    }
    report.sections.insert(report.sections.begin(),
                           {"Window", title + "\n(the findings above and the sections below are "
                                              "this window's and the history's; other windows "
                                              "follow)\n"});
    history::add_history(run.history, report);
    for (const std::string& p : run.problems)
      report.findings.push_back({model::Severity::kWarning, "collector", "history: " + p});
    warned = warned || warns(report);
    // The page draws the history with the windows marked.
    report.json["history"] = history::history_json(run.history);
    report.json["windows"] = windows;
    write_exports(req, slice, result, steps, simulated, show, err, rc);
    text = report::render_text(report, options);
    doc = std::move(report);
  }
  doc.json["windows"] = std::move(windows);
  return finish(req, doc, text + rest, warned, rc, out, err, document);
}

}  // namespace

namespace {

// `report` (and `run`) print the report and write its files; `diff` takes, in `doc`, what the
// JSON file would hold, with its own progress lines (`show`).
ReportStatus run_report(const ReportRequest& req, std::FILE* out, std::FILE* err, const Show& own,
                        ReportDocument* doc) {
  ReportStatus rc = ReportStatus::kClean;
  exporter::StepWindow steps;  // the CLI checks --steps (a usage error); this is the backstop
  if (!req.steps.empty() && !exporter::StepWindow::parse(req.steps, steps)) {
    std::fprintf(err, "ncclwatch: --steps %s: expected A:B, A: or A (1-based step numbers)\n",
                 req.steps.c_str());
    return ReportStatus::kError;
  }
  ProgressLine progress(err, req.progress && !own);
  const Show show = own ? own : Show([&progress](const std::string& line) { progress.show(line); });
  model::JobTrace job;
  const std::optional<JobInput> input = load(req, job, show, err);
  if (!input) return ReportStatus::kError;
  if (doc != nullptr) doc->kind = input->kind;
  if (job.ranks.empty()) {
    say_no_ranks(req, *input, job, err);
    return ReportStatus::kError;
  }
  // A demo's run says SIMULATED however it is reported: by `ncclwatch demo`, or later from the
  // traces it kept, by the job id every trace header records (never by a file beside them).
  const bool ncclwatch_traces = input->kind == InputKind::kNcclwatch;
  const std::string simulated = !req.simulated.empty() ? req.simulated
                                : ncclwatch_traces     ? demo::simulated_line_of_job(job.job)
                                                       : std::string();
  RunHistory run;
  if (ncclwatch_traces) {
    show("reading the step summaries");
    run = read_run_history(job, input->paths[0]);
  }
  if (!history::one_whole_run(run.windows)) {
    // Each window is cut out of its ranks' records. Only ranks without window marks (or with a
    // whole-run one, which makes the run one whole run) were digested (lean_load.h): no window
    // holds them. Should one ever, the job is read again whole rather than cut short.
    if (any_digested_in_windows(job, run.windows)) {
      show("reading the traces again for the capture windows");
      JobLoadSettings settings;
      settings.job = req.job;
      settings.progress = show;
      job = load_job_input(*input, settings);
    }
    return report_windows(req, *input, job, run, steps, simulated, show, out, err, doc);
  }
  if (req.window > 1) {
    model::say(err, fmt::format("--window {}: the run is one whole-run window", req.window));
    return ReportStatus::kUsage;
  }
  PipelineResult result = analyse(req, *input, job, show);
  model::Report& report = result.report;
  add_simulated(simulated, report);
  if (run.history.steps > 0) {
    // One whole-run window: the report as it always was, a short history after the analyses
    // (which name late ranks with more evidence: no findings from the history here).
    history::HistoryReportOptions h;
    h.findings = false;
    h.rows = 6;
    history::add_history(run.history, report, h);
    std::rotate(report.sections.begin(), report.sections.begin() + 1, report.sections.end());
    nlohmann::json windows = nlohmann::json::array();
    for (std::size_t i = 0; i < run.windows.size(); ++i)
      windows.push_back(history::window_json(run.windows[i], i));
    report.json["windows"] = std::move(windows);
  }
  // Without a timeline export only the report is left to write: the loaded model goes first, or
  // the text and JSON built next would peak on top of it (+8 % at 64 ranks x 800 steps).
  if (req.trace_path.empty()) std::vector<model::RankTrace>().swap(job.ranks);
  show("writing the report");
  write_exports(req, job, result, steps, simulated, show, err, rc);
  return finish(req, report, report::render_text(report, text_options(req, out)), warns(report), rc,
                out, err, doc);
}

}  // namespace

ReportStatus report_job(const ReportRequest& req, std::FILE* out, std::FILE* err) {
  return run_report(req, out, err, Show(), nullptr);
}

std::optional<ReportDocument> report_document(const ReportRequest& req, std::FILE* err,
                                              const Show& progress) {
  std::FILE* null = std::fopen("/dev/null", "w");
  if (null == nullptr) {
    model::say(err, std::string("cannot open /dev/null: ") + std::strerror(errno));
    return std::nullopt;
  }
  ReportDocument doc;
  const ReportStatus rc = run_report(req, null, err, progress, &doc);
  std::fclose(null);
  if (rc == ReportStatus::kError || rc == ReportStatus::kUsage || doc.json.is_null())
    return std::nullopt;
  return doc;
}

}  // namespace ncclwatch::pipeline

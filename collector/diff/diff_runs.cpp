#include "diff/diff_runs.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>

#include "diff/diff_render.h"
#include "diff/run_comparison.h"
#include "diff/run_input.h"
#include "model/message.h"
#include "pipeline/progress_line.h"

namespace ncclwatch::diff {
namespace {

bool write_file(const std::string& path, const std::string& text, std::FILE* err) {
  std::ofstream f(path, std::ios::trunc | std::ios::binary);
  if (f) f << text;
  if (!f || !f.flush()) {
    model::say(err, "cannot write " + path + ": " + std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

DiffStatus diff_runs(const DiffRequest& req, std::FILE* out, std::FILE* err) {
  std::optional<RunInput> base, now;
  {
    pipeline::ProgressLine progress(err, req.progress);
    auto show = [&progress](const char* side) {
      return [&progress, side](const std::string& line) {
        progress.show(std::string(side) + ": " + line);
      };
    };
    base = load_run(req.base, "BASE", err, show("BASE"));
    if (!base) return DiffStatus::kError;
    now = load_run(req.now, "NEW", err, show("NEW"));
    if (!now) return DiffStatus::kError;
  }
  const DiffResult result = compare_reports(base->report, now->report);
  const Sides sides{base->path, base->kind, now->path, now->kind};
  DiffStatus status = result.regression ? DiffStatus::kRegression : DiffStatus::kNoRegression;
  if (!req.json_path.empty() &&
      !write_file(
          req.json_path,
          render_json(result, sides).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
              "\n",
          err)) {
    status = DiffStatus::kError;
  }
  if (!req.html_path.empty() && !write_file(req.html_path, render_html(result, sides), err)) {
    status = DiffStatus::kError;
  }
  const std::string text = render_text(result, sides);
  std::fflush(err);
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) {
    model::say(err, std::string("cannot write the diff: ") + std::strerror(errno));
    return DiffStatus::kError;
  }
  return status;
}

}  // namespace ncclwatch::diff

// `ncclwatch diff BASE NEW [--json FILE] [--html FILE]`: what changed between two runs and why
// the step got slower (collector/diff). BASE and NEW: report JSONs written earlier
// (`report --json FILE`) or anything `ncclwatch report` reads.
#include <memory>

#include "command.h"
#include "diff/diff_runs.h"

namespace {

ncclwatch::tools::Command diff_command{
    "diff", [](CLI::App& app, int& exit_code) {
      auto req = std::make_shared<ncclwatch::diff::DiffRequest>();
      CLI::App* sub = app.add_subcommand(
          "diff", "Compare two runs: what changed, beyond the runs' noise, and why the step did");
      sub->add_option("base", req->base,
                      "The known-good run: a report JSON (report --json), or what report reads: a "
                      "trace directory, Kineto traces, Nsight Systems exports")
          ->required();
      sub->add_option("new", req->now, "The run to compare with it (same kinds of input)")
          ->required();
      sub->add_option("--json", req->json_path, "Also write the comparison as JSON (docs/diff.md)");
      sub->add_option("--html", req->html_path,
                      "Also write the comparison as a self-contained HTML page");
      sub->add_flag("!--no-progress", req->progress, "No progress lines on stderr");
      sub->callback([req, &exit_code] {
        exit_code = static_cast<int>(ncclwatch::diff::diff_runs(*req, stdout, stderr));
      });
    }};

}  // namespace

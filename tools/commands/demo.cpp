// `ncclwatch demo SCENARIO [--html FILE] [--json FILE] [--trace FILE] [--dir DIR]`: runs a small
// 4-rank training job of the stand-in programs bundled with ncclwatch (fake NCCL/CUDA/CUPTI, no
// GPU) with one problem injected, prints the report and writes the page, every output marked
// SIMULATED (collector/demo). Without a scenario, or with an unknown one, it lists them (exit 2).
// Exit status: 0 when the report and the page were written, 1 when the demo could not run.
#include <memory>
#include <string>

#include "command.h"
#include "demo/demo_job.h"
#include "demo/scenarios.h"
#include "install_paths.h"

namespace {

using ncclwatch::tools::say;

struct DemoArgs {
  std::string scenario, html, json, trace, dir;
  bool progress = true;
};

int list_scenarios(const std::string& why) {
  say("demo: {}; one of (ncclwatch demo SCENARIO [--html FILE] [--json FILE] [--trace FILE] "
      "[--dir DIR]):",
      why);
  for (const std::string& line : ncclwatch::demo::scenario_lines()) say("{}", line);
  return ncclwatch::tools::kExitUsage;
}

int demo(const DemoArgs& args) {
  if (args.scenario.empty()) return list_scenarios("name a scenario");
  const ncclwatch::demo::Scenario* scenario = ncclwatch::demo::find_scenario(args.scenario);
  if (scenario == nullptr) return list_scenarios("no scenario '" + args.scenario + "'");
  ncclwatch::demo::DemoRequest req;
  req.scenario = scenario;
  req.demo_dir = ncclwatch::tools::demo_directory();
  if (const std::string missing = ncclwatch::demo::check_demo_dir(req.demo_dir); !missing.empty()) {
    say("demo: {}: this ncclwatch was built or installed without its demo", missing);
    return ncclwatch::tools::kExitError;
  }
  std::string tried;
  req.shim = ncclwatch::tools::find_shim_library(tried);
  if (req.shim.empty()) {
    say("demo: cannot find libncclwatch.so (looked at {})", tried);
    return ncclwatch::tools::kExitError;
  }
  req.dir = args.dir;
  req.html_path = args.html.empty() ? "ncclwatch-demo-" + args.scenario + ".html" : args.html;
  req.json_path = args.json;
  req.trace_path = args.trace;
  req.progress = args.progress;
  return ncclwatch::demo::run_demo(req, stdout, stderr);
}

ncclwatch::tools::Command demo_command{
    "demo", [](CLI::App& app, int& exit_code) {
      auto args = std::make_shared<DemoArgs>();
      CLI::App* sub = app.add_subcommand(
          "demo",
          "Run a SIMULATED 4-rank job (bundled stand-in NCCL/CUDA/CUPTI, no GPU) with one "
          "problem injected, print its report and write its page");
      sub->add_option("scenario", args->scenario,
                      "healthy, sawtooth, checkpoint, straggler, slow-node, fabric, flat-low, "
                      "tp-across-nodes or hang (none: the list)");
      sub->add_option("--html", args->html,
                      "Where to write the page (default ./ncclwatch-demo-SCENARIO.html)");
      sub->add_option("--json", args->json, "Also write the report as JSON to FILE");
      sub->add_option("--trace", args->trace,
                      "Also write the merged timeline as Chrome-trace JSON (Perfetto, HTA)");
      sub->add_option("--dir", args->dir,
                      "Keep the traces in DIR (new or empty; default: a temporary directory)");
      sub->add_flag("!--no-progress", args->progress, "No progress lines on stderr");
      sub->callback([args, &exit_code] { exit_code = demo(*args); });
    }};

}  // namespace

// Runs one `ncclwatch demo` scenario (demo/scenarios.h): the bundled stand-in job with
// libncclwatch.so preloaded, then the report, marked SIMULATED in every output. Kept here, not
// in tools/, so that tests reach it; the CLI finds the paths (tools/install_paths.h).
#pragma once

#include <cstdio>
#include <string>

#include "demo/scenarios.h"

namespace ncclwatch::demo {

struct DemoRequest {
  const Scenario* scenario = nullptr;
  std::string demo_dir;    // the private directory: fake_launcher, fake_train, fake_rank, lib/
  std::string shim;        // libncclwatch.so
  std::string dir;         // where the traces go: "" = a temporary directory, removed at the end
  std::string html_path;   // the page (always written)
  std::string json_path;   // "" = none
  std::string trace_path;  // "" = no Chrome-trace export
  bool progress = true;
};

// What is missing from `demo_dir` for the demo to run ("" when nothing): the one line to say.
std::string check_demo_dir(const std::string& demo_dir);

// Runs the job and prints the report on `out` (messages on `err`). The CLI's exit status: 0 when
// the report and the page were written (the findings are the point of a demo), 1 when the job
// could not run as it should or an output could not be written.
int run_demo(const DemoRequest& request, std::FILE* out, std::FILE* err);

}  // namespace ncclwatch::demo

// `ncclwatch topo LOG... [--json FILE]`: NCCL's view of rings, trees and transports from
// NCCL_DEBUG=INFO logs (and NCCL_TOPO/GRAPH_DUMP_FILE XML) alone, e.g. of an old run.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "model/job_trace.h"
#include "model/match_result.h"
#include "model/report.h"
#include "topology/topology_report.h"

namespace {

struct TopoArgs {
  std::vector<std::string> inputs;
  std::string json;
};

int run_topo(const TopoArgs& args) {
  std::vector<std::string> logs;
  for (const auto& in : args.inputs) {
    std::error_code ec;
    const auto status = std::filesystem::status(in, ec);
    if (ec) {
      // The errno as it is: a directory on the way we may not enter is not a missing file.
      ncclwatch::tools::say("{}: {}", in, ec.message());
      return ncclwatch::tools::kExitError;
    }
    if (std::filesystem::is_directory(status)) {
      if (std::filesystem::directory_iterator(in, ec); ec) {
        ncclwatch::tools::say("{}: cannot read the directory: {}", in, ec.message());
        return ncclwatch::tools::kExitError;
      }
      auto found = ncclwatch::topology::find_logs(in);
      if (found.empty()) ncclwatch::tools::say("{}: no NCCL logs or dumps in this directory", in);
      logs.insert(logs.end(), found.begin(), found.end());
    } else {
      logs.push_back(in);  // an unreadable file is said by the parser, with its errno
    }
  }
  if (logs.empty()) return ncclwatch::tools::kExitError;
  ncclwatch::model::Report report;
  const bool recognised = ncclwatch::topology::add_to_report(
      logs, ncclwatch::model::JobTrace{}, ncclwatch::model::MatchResult{}, report);
  for (const auto& s : report.sections)
    std::printf("== %s ==\n%s", s.title.c_str(), s.body.c_str());
  if (!args.json.empty()) {
    std::ofstream out(args.json);
    // Names parsed from logs may hold any bytes: invalid UTF-8 becomes U+FFFD, never a throw.
    out << report.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    if (!out) {
      ncclwatch::tools::say("cannot write {}", args.json);
      return 1;
    }
  }
  if (!recognised) {
    ncclwatch::tools::say(
        "no NCCL log recognised in {} input(s): no NCCL INFO line, no NCCL topology/graph XML "
        "dump",
        logs.size());
    return 1;
  }
  // Exit status for scripts: 3 when a warning or worse was found, 1 when nothing in the input was
  // NCCL's, 2 for missing input.
  for (const auto& f : report.findings)
    if (f.severity >= ncclwatch::model::Severity::kWarning) return 3;
  return 0;
}

ncclwatch::tools::Command topo_command{
    "topo", [](CLI::App& app, int& exit_code) {
      auto args = std::make_shared<TopoArgs>();
      CLI::App* sub = app.add_subcommand(
          "topo", "Check NCCL's rings, trees and transports from NCCL_DEBUG=INFO logs");
      sub->add_option("logs", args->inputs,
                      "NCCL log files, topology/graph XML dumps, or directories holding them")
          ->required();
      sub->add_option("--json", args->json, "Also write the findings as JSON to FILE");
      sub->callback([args, &exit_code] { exit_code = run_topo(*args); });
    }};

}  // namespace

// `ncclwatch reduce DIR [--host NAME | --all-hosts] [--job ID] [--compute-resolution-ns N]`: this
// node's rank traces in DIR -> one node file (ncclwatch.<host>.<job>.node) that `ncclwatch
// report DIR` reads instead of them. Run once per node where the traces are (docs/multi-node.md).
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "command.h"
#include "model/message.h"
#include "model/vocabulary.h"
#include "reduce/digest_codec.h"
#include "reduce/node_reduce.h"

namespace {

struct ReduceArgs {
  std::string dir;
  std::string host;
  std::string job;
  bool all_hosts = false;
  unsigned threads = 0;
  int64_t compute_resolution_ns = 1;
};

std::string gib(uint64_t bytes) {
  return fmt::format("{:.2f} GiB", bytes / double(1ull << 30));
}

ncclwatch::tools::Command reduce_command{
    "reduce", [](CLI::App& app, int& exit_code) {
      auto args = std::make_shared<ReduceArgs>();
      CLI::App* sub = app.add_subcommand(
          "reduce", "Reduce this node's rank traces to a node file that `report` merges");
      sub->add_option("dir", args->dir, "Trace directory (NCCLWATCH_DIR)")->required();
      sub->add_option("--host", args->host,
                      "The host whose ranks to reduce, as the traces name it (default: this "
                      "machine, NCCLWATCH_HOST or its host name)");
      sub->add_flag("--all-hosts", args->all_hosts,
                    "Every host in DIR, one node file each (traces gathered on one machine)");
      sub->add_option("--job", args->job, "Job id (default: the job with the most ranks)");
      sub->add_option("--threads", args->threads, "Ranks read at once (default: one per core)");
      sub->add_option("--compute-resolution-ns", args->compute_resolution_ns,
                      "Round compute kernels' GPU times to this many ns (e.g. 1000): smaller "
                      "node files, GPU-time figures within about that much a kernel, the same "
                      "verdicts (default 1: exact, the traces' report byte for byte)")
          ->check(CLI::Range(int64_t{1}, ncclwatch::reduce::kMaxComputeResolutionNs));
      sub->callback([args, &exit_code] {
        if (args->all_hosts && !args->host.empty()) {
          ncclwatch::tools::say("give --host or --all-hosts, not both");
          exit_code = ncclwatch::tools::kExitUsage;
          return;
        }
        ncclwatch::reduce::ReduceOptions options;
        options.job = args->job;
        options.host = args->host.empty() ? ncclwatch::reduce::this_host() : args->host;
        options.all_hosts = args->all_hosts;
        options.threads = args->threads;
        options.compute_resolution_ns = args->compute_resolution_ns;
        const ncclwatch::reduce::ReduceResult result =
            ncclwatch::reduce::reduce_directory(args->dir, options);
        for (const auto& p : result.problems)
          ncclwatch::model::say(stderr, ncclwatch::model::problem_line(p));
        if (!result.error.empty()) {
          ncclwatch::tools::say("{}", result.error);
          exit_code = ncclwatch::tools::kExitError;
          return;
        }
        for (const auto& node : result.nodes) {
          if (node.path.empty()) {
            std::printf(
                "%s: nothing to reduce: its %zu rank(s) have capture windows (report "
                "reads them from their traces)\n",
                node.host.c_str(), node.left_to_traces.size());
            continue;
          }
          std::printf("%s\n",
                      fmt::format("{}: {} rank(s), {} records, {} of traces -> {} ({:.2f} "
                                  "% of the traces){}",
                                  node.host, node.ranks, node.records, gib(node.trace_bytes),
                                  node.path, node.percent_of_traces(),
                                  node.left_to_traces.empty()
                                      ? ""
                                      : fmt::format("; {} rank(s) with capture windows "
                                                    "left to their traces",
                                                    node.left_to_traces.size()))
                          .c_str());
        }
        exit_code = ncclwatch::tools::kExitOk;
      });
    }};

}  // namespace

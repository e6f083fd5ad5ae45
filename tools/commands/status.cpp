// `ncclwatch status [--job ID] [--dir DIR] [--json FILE] [--watch SECONDS] [--stacks]`: a live
// view of a running or hung job -- per comm, how far each rank got and who is behind; per rank,
// the NCCL call it is inside now and for how long. Reads this node's segments (read-only) and the
// trace files of DIR (a shared file system shows every node's ranks). --stacks: where the ranks of
// this node that are behind are in their Python code (py-spy), saved next to their traces for the
// report's hang verdict (docs/always-on.md, "Where a stuck rank is").
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "command.h"
#include "live/py_spy.h"
#include "live/stack_taker.h"
#include "live/status_reader.h"
#include "live/status_render.h"

namespace {

using ncclwatch::tools::say;

struct StatusArgs {
  ncclwatch::live::StatusOptions options;
  std::string json_path;
  double watch_s = 0;
  bool stacks = false;
};

// A rank outside NCCL this long is stalled on the host (a data loader, a checkpoint).
constexpr std::chrono::seconds kHostStall{5};

// --stacks: the Python stack of each rank of this node that is behind, one line each on stdout;
// without py-spy, one line on how to get it. With --watch, each rank again only when why it is
// behind changed (a new hang), not at every refresh.
class StackPrinter {
 public:
  void print(const StatusArgs& args, const ncclwatch::live::JobStatus& st) {
    std::vector<ncclwatch::live::StackTarget> targets;
    for (auto& t : ncclwatch::live::stack_targets(st, kHostStall))
      if (taken_.insert({t.pid, t.hold}).second) targets.push_back(std::move(t));
    if (targets.empty()) {
      if (first_)
        std::printf(
            "\nPython stacks: no rank of this node is behind or stalled on the host for "
            "%lld s: none taken\n",
            static_cast<long long>(kHostStall.count()));
      first_ = false;
      return;
    }
    first_ = false;
    const std::string py_spy = ncclwatch::live::find_py_spy();
    if (py_spy.empty()) {
      if (!hinted_) say("{}", ncclwatch::live::py_spy_hint());
      hinted_ = true;
      return;
    }
    ncclwatch::live::TakeOptions options;
    options.py_spy = py_spy;
    options.dir = args.options.dir;
    options.job = st.job;
    std::printf("\nPython stacks (py-spy) of the ranks of this node that are behind:\n");
    for (const auto& t : targets) {
      const auto taken = ncclwatch::live::take_stack(t, options);
      std::printf("  %s\n", ncclwatch::live::render_taken(taken).c_str());
      std::fflush(stdout);
    }
  }

 private:
  std::set<std::pair<int64_t, std::string>> taken_;  // (pid, hold)
  bool first_ = true;
  bool hinted_ = false;
};

bool write_json(const std::string& path, const ncclwatch::live::JobStatus& st) {
  std::ofstream out(path, std::ios::trunc);
  out << ncclwatch::live::render_status_json(st).dump(2) << "\n";
  return static_cast<bool>(out);
}

ncclwatch::tools::Command status_command{
    "status", [](CLI::App& app, int& exit_code) {
      auto args = std::make_shared<StatusArgs>();
      CLI::App* sub = app.add_subcommand(
          "status",
          "Live view of a running or hung job: who is inside which NCCL call, who is behind");
      sub->add_option("--job", args->options.job, "Only this job (default: every job found)");
      sub->add_option("--dir", args->options.dir,
                      "Trace directory (shared file system: every node's ranks); default: the "
                      "trace files this node's segments name");
      sub->add_option("--json", args->json_path, "Also write the (last) view as JSON to FILE");
      sub->add_flag("--stacks", args->stacks,
                    "Also the Python stack (py-spy dump) of each rank of this node that is "
                    "behind, saved next to its trace for the report's hang verdict");
      sub->add_option("--watch", args->watch_s,
                      "Refresh every SECONDS (in place on a terminal, plain blocks otherwise)")
          ->check(CLI::Range(0.1, 3600.0));
      sub->callback([args, &exit_code] {
        ncclwatch::live::StatusReader reader(args->options);
        StackPrinter stacks;
        const bool tty = ::isatty(STDOUT_FILENO) != 0;
        for (bool first = true;; first = false) {
          const auto st = reader.read();
          // Nothing to show, once: said as such, no empty table, and an error status (a script
          // polling for its job must not read "no job" as "all well"). --watch waits for one.
          if (st.ranks.empty() && args->watch_s <= 0) {
            for (const auto& n : st.notes) say("{}", n);
            say("no ncclwatch job found{}: no segment of it in /dev/shm{}",
                args->options.job.empty() ? "" : " named " + args->options.job,
                args->options.dir.empty() ? " (give the trace directory with --dir DIR)"
                                          : " and no trace file in " + args->options.dir);
            if (!args->json_path.empty() && !write_json(args->json_path, st))
              say("cannot write {}", args->json_path);
            exit_code = ncclwatch::tools::kExitError;
            return;
          }
          const std::string text = ncclwatch::live::render_status_text(st);
          if (args->watch_s > 0 && tty) {
            std::fputs("\x1b[H\x1b[2J", stdout);  // home + clear, like top
          } else if (!first) {
            std::fputs("\n", stdout);
          }
          std::fputs(text.c_str(), stdout);
          std::fflush(stdout);
          if (args->stacks) stacks.print(*args, st);
          if (!args->json_path.empty() && !write_json(args->json_path, st)) {
            say("cannot write {}", args->json_path);
            exit_code = ncclwatch::tools::kExitError;
            return;
          }
          if (args->watch_s <= 0) break;
          std::this_thread::sleep_for(std::chrono::duration<double>(args->watch_s));
        }
      });
    }};

}  // namespace

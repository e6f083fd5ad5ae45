// `ncclwatch status [--job ID] [--dir DIR] [--json FILE] [--watch SECONDS]`: a live view of a
// running or hung job -- per comm, how far each rank got and who is behind; per rank, the NCCL
// call it is inside now and for how long. Reads this node's segments (read-only) and the trace
// files of DIR (a shared file system shows every node's ranks).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "command.h"
#include "live/status_reader.h"
#include "live/status_render.h"

namespace {

using ncclwatch::tools::say;

struct StatusArgs {
  ncclwatch::live::StatusOptions options;
  std::string json_path;
  double watch_s = 0;
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
      sub->add_option("--watch", args->watch_s,
                      "Refresh every SECONDS (in place on a terminal, plain blocks otherwise)")
          ->check(CLI::Range(0.1, 3600.0));
      sub->callback([args, &exit_code] {
        ncclwatch::live::StatusReader reader(args->options);
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

// `ncclwatch capture [--job ID] [--dir DIR] [--steps N | --seconds S]`: full detail, now, on every
// rank of a running job (docs/always-on.md, "Capture windows"): the request goes into the segment
// of each rank of this node and into the control file of the job's trace directory, which the
// ranks of every node read once a second. Every rank captures the same steps.
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "live/capture_asker.h"

namespace {

std::string who_asks() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const struct passwd* pw = getpwuid(geteuid());
  return std::string(pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : "?") + "@" + host;
}

ncclwatch::tools::Command capture_command{
    "capture", [](CLI::App& app, int& exit_code) {
      auto options = std::make_shared<ncclwatch::live::CaptureOptions>();
      CLI::App* sub = app.add_subcommand(
          "capture", "Full detail now: a capture window on every rank of a running job");
      sub->add_option("--job", options->job,
                      "Job id (default: the one job running under ncclwatch on this node)");
      sub->add_option("--dir", options->dir,
                      "The job's trace directory (default: the one this node's ranks write to); "
                      "ranks on other nodes read the request there");
      auto* steps = sub->add_option("--steps", options->steps, "Capture N steps (default 20)")
                        ->check(CLI::Range(1, 1'000'000));
      auto* seconds = sub->add_option("--seconds", options->seconds,
                                      "Capture S seconds of wall time instead of steps")
                          ->check(CLI::Range(0.001, 86'400.0));
      steps->excludes(seconds);
      sub->callback([options, &exit_code] {
        options->asker = who_asks();
        const auto outcome = ncclwatch::live::ask_capture(*options);
        for (const auto& w : outcome.warnings) std::fprintf(stderr, "ncclwatch: %s\n", w.c_str());
        if (!outcome.ok) {
          std::fprintf(stderr, "ncclwatch: capture: %s\n", outcome.error.c_str());
          exit_code = ncclwatch::tools::kExitError;
          return;
        }
        std::printf("ncclwatch: %s\n", ncclwatch::live::describe(outcome).c_str());
        exit_code = ncclwatch::tools::kExitOk;
      });
    }};

}  // namespace

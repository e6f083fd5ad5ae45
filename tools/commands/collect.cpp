// `ncclwatch collect [--job ID] [--dir DIR] [--force]`: salvages the shared-memory segments that
// dead (or killed) ranks left on this node into their trace files, one line per segment.
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "trace/salvage.h"

namespace {

struct CollectArgs {
  std::string job;
  ncclwatch::trace::SalvageOptions options;
};

ncclwatch::tools::Command collect_command{
    "collect", [](CLI::App& app, int& exit_code) {
      auto args = std::make_shared<CollectArgs>();
      CLI::App* sub =
          app.add_subcommand("collect", "Salvage leftover shared-memory segments into trace files");
      sub->add_option("--job", args->job,
                      "Only this job's segments (default: every ncclwatch segment)");
      sub->add_option(
          "--dir", args->options.dir,
          "Write here when a segment's trace file cannot be written (unwritable, its file "
          "system full, or not named)");
      sub->add_flag(
          "--force", args->options.force,
          "Salvage even segments whose owner process is still alive (hung or pid reused)");
      sub->callback([args, &exit_code] {
        const auto results = ncclwatch::trace::salvage_job(args->job, args->options);
        if (results.empty()) {
          std::printf("no leftover ncclwatch segments%s%s\n", args->job.empty() ? "" : " of job ",
                      args->job.c_str());
        }
        int failed = 0;
        for (const auto& r : results) {
          std::printf("%s\n", ncclwatch::trace::describe(r).c_str());
          if (r.status == ncclwatch::trace::SalvageStatus::kFailed) ++failed;
        }
        std::fflush(stdout);
        if (failed != 0) {
          ncclwatch::tools::say("{} segment(s) could not be salvaged (left in place)", failed);
          exit_code = ncclwatch::tools::kExitError;
        }
      });
    }};

}  // namespace

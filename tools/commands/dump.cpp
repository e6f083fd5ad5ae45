// `ncclwatch dump FILE [--kinds call,kernel,...] [--header]`: a trace file as JSON lines, one
// object per record with every field and names resolved; a summary line goes to stderr.
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "trace/dump.h"

namespace {

struct DumpArgs {
  std::string file;
  std::string kinds;
  bool header = false;
};

ncclwatch::tools::Command dump_command{
    "dump", [](CLI::App& app, int& exit_code) {
      auto args = std::make_shared<DumpArgs>();
      CLI::App* sub = app.add_subcommand("dump", "Print a trace file's records as JSON lines");
      sub->add_option("file", args->file, "Trace file (ncclwatch.<host>.<pid>.trace)")->required();
      sub->add_option(
          "--kinds", args->kinds,
          "Only these record kinds, comma-separated (call,group,comm,comm_end,identity,clock,"
          "kernel,string,kernel_link,coll_gpu,launch,nvtx,unique_id,in_flight,sched,step,window)");
      sub->add_flag("--header", args->header, "Print the file header as the first line");
      sub->callback([args, &exit_code] {
        ncclwatch::trace::DumpOptions options;
        options.header = args->header;
        std::string error;
        const auto kinds = ncclwatch::trace::parse_kinds(args->kinds, error);
        if (!kinds) {
          ncclwatch::tools::say("--kinds: {}", error);
          exit_code = ncclwatch::tools::kExitUsage;
          return;
        }
        options.kinds = *kinds;
        exit_code = ncclwatch::trace::dump_trace(args->file, options, stdout, stderr);
      });
    }};

}  // namespace

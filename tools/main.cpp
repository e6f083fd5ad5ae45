// ncclwatch: the command-line front end (run, report, collect, dump, topo, ...).
#include <cstdio>
#include <exception>

#include "command.h"

namespace ncclwatch::tools {

static std::vector<const Command*>& registry() {
  static std::vector<const Command*> list;
  return list;
}

Command::Command(const char* n, Setup s) : name(n), setup(std::move(s)) { registry().push_back(this); }

const std::vector<const Command*>& commands() { return registry(); }

}  // namespace ncclwatch::tools

int main(int argc, char** argv) {
  CLI::App app{"ncclwatch: why your distributed training is slow (NCCL overlap, stragglers, topology)"};
  app.require_subcommand(1);
  int exit_code = 0;
  for (const auto* cmd : ncclwatch::tools::commands()) cmd->setup(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ncclwatch: %s\n", e.what());
    return 1;
  }
  return exit_code;
}

// ncclwatch: the command-line front end (run, report, collect, dump, topo, ...).
//
// The CLI contract (README, "Exit codes"): 0 ok, 1 error, 2 usage, 3 findings at warning level or
// worse (report, topo, run --strict); `run` passes on its command's status (128+N for signal N).
// Every message of ours starts with "ncclwatch: ".
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>

#include "command.h"

namespace ncclwatch::tools {

static std::vector<const Command*>& registry() {
  static std::vector<const Command*> list;
  return list;
}

Command::Command(const char* n, Setup s) : name(n), setup(std::move(s)) {
  registry().push_back(this);
}

const std::vector<const Command*>& commands() {
  return registry();
}

}  // namespace ncclwatch::tools

int main(int argc, char** argv) {
  CLI::App app{
      "ncclwatch: why your distributed training is slow (NCCL overlap, stragglers, topology)"};
  app.require_subcommand(1);
  int exit_code = 0;
  for (const auto* cmd : ncclwatch::tools::commands()) cmd->setup(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (106, 109, ...) mean "usage" to us; one line, then where to look.
    std::fprintf(stderr, "ncclwatch: %s (see ncclwatch --help)\n", e.what());
    return ncclwatch::tools::kExitUsage;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "ncclwatch: out of memory (the input is larger than this machine can "
                 "hold; try a machine with more memory or fewer ranks)\n");
    return ncclwatch::tools::kExitError;
  } catch (const std::length_error& e) {
    // A size read from an input that no container can hold: the same as running out of memory.
    std::fprintf(stderr, "ncclwatch: input too large to hold in memory (%s)\n", e.what());
    return ncclwatch::tools::kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ncclwatch: %s\n", e.what());
    return ncclwatch::tools::kExitError;
  }
  // The last word on stdout for every command: a report, a dump or a collect summary that could
  // not be written (a full disk under `> file`, /dev/full) is not a success. (A command that
  // failed already said why; report and dump also say it about stdout.)
  errno = 0;
  if ((std::fflush(stdout) != 0 || std::ferror(stdout)) &&
      (exit_code == 0 || exit_code == ncclwatch::tools::kExitFindings)) {
    const int error = errno;
    std::fprintf(stderr, "ncclwatch: cannot write to standard output: %s\n",
                 error != 0 ? std::strerror(error) : "write error");
    return ncclwatch::tools::kExitError;
  }
  return exit_code;
}

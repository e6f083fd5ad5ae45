// ncclwatch: the command-line front end (run, report, collect, dump, topo, ...).
//
// The CLI contract (README, "Exit codes"): 0 ok, 1 error, 2 usage, 3 findings at warning level or
// worse (report, topo, run --strict); `run` passes on its command's status (128+N for signal N).
// Every message of ours starts with "ncclwatch: ".
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

#include "command.h"
#include "ncclwatch/format.h"

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

namespace {

using ncclwatch::tools::say;

// "ncclwatch 0.1.0 (record format 3, build v0.1-12-gabc1234)": the build id is `git describe` of
// the source tree when it was configured ("unknown" outside a git checkout).
std::string version_text() {
  return fmt::format("ncclwatch {} (record format {}, build {})", NCCLWATCH_VERSION,
                     ncclwatch::format::kLayoutVersion, NCCLWATCH_BUILD_ID);
}

// "collect, dump, exporter, ...": the registered commands, sorted (registration follows the
// static initialisation order of their files, which is unspecified).
std::string command_list() {
  std::vector<std::string> names;
  for (const auto* cmd : ncclwatch::tools::commands()) names.emplace_back(cmd->name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool is_command(std::string_view word) {
  for (const auto* cmd : ncclwatch::tools::commands())
    if (word == cmd->name) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "ncclwatch: why your distributed training is slow (NCCL overlap, stragglers, topology)",
      "ncclwatch"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text(),
                       "Print the version, the record-format version and the build id");
  int exit_code = 0;
  for (const auto* cmd : ncclwatch::tools::commands()) cmd->setup(app, exit_code);
  // `ncclwatch` alone: the usage, and the usage-error status (README, "Exit codes").
  if (argc < 2) {
    std::fputs(app.help().c_str(), stdout);
    return ncclwatch::tools::kExitUsage;
  }
  // A first word that is neither an option nor a command: name it and the commands there are
  // (CLI11 would only say that a subcommand is required).
  if (argv[1][0] != '-' && !is_command(argv[1])) {
    say("unknown command '{}' (commands: {}; see ncclwatch --help)", argv[1], command_list());
    return ncclwatch::tools::kExitUsage;
  }
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
    say("{} (see ncclwatch --help)", e.what());
    return ncclwatch::tools::kExitUsage;
  } catch (const std::bad_alloc&) {
    say("out of memory (the input is larger than this machine can hold; try a machine with more "
        "memory or fewer ranks)");
    return ncclwatch::tools::kExitError;
  } catch (const std::length_error& e) {
    // A size read from an input that no container can hold: the same as running out of memory.
    say("input too large to hold in memory ({})", e.what());
    return ncclwatch::tools::kExitError;
  } catch (const std::exception& e) {
    say("{}", e.what());
    return ncclwatch::tools::kExitError;
  }
  // The last word on stdout for every command: a report, a dump or a collect summary that could
  // not be written (a full disk under `> file`, /dev/full) is not a success. (A command that
  // failed already said why; report and dump also say it about stdout.)
  errno = 0;
  if ((std::fflush(stdout) != 0 || std::ferror(stdout)) &&
      (exit_code == 0 || exit_code == ncclwatch::tools::kExitFindings)) {
    const int error = errno;
    say("cannot write to standard output: {}", error != 0 ? std::strerror(error) : "write error");
    return ncclwatch::tools::kExitError;
  }
  return exit_code;
}

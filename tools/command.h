// The `ncclwatch` CLI is a set of subcommands, one file each under tools/commands/. A command
// registers itself with a static Command object; main() hands each one the CLI11 app. The
// commands only parse arguments and print: the logic they call lives in collector/.
#pragma once

#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "model/message.h"

namespace ncclwatch::tools {

// Exit codes of every subcommand (README, "Exit codes"). `run` returns its command's status.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitFindings = 3;  // a finding at warning level or worse

struct Command {
  // Adds the subcommand to `app`; the callback it installs sets `exit_code`.
  using Setup = std::function<void(CLI::App& app, int& exit_code)>;
  Command(const char* name, Setup setup);
  const char* name;
  Setup setup;
};

const std::vector<const Command*>& commands();

// One message on stderr through the one sink (model/message.h): "ncclwatch: TEXT".
template <typename... Args>
void say(fmt::format_string<Args...> format, Args&&... args) {
  model::say(stderr, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ncclwatch::tools

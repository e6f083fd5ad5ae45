// The fixture of the command-line tests: `ncclwatch ARGS` run as a child process in a scratch
// directory, its exit status and both outputs captured, and the message contract (README, "Exit
// codes": every message starts with "ncclwatch: ") checked on stderr.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "process.h"

namespace ncclwatch::cli_test {

namespace fs = std::filesystem;
using Result = ncclwatch::test_support::CommandResult;

class Cli : public ::testing::Test {
 protected:
  // `ncclwatch ARGS` in root_, stdout and stderr captured; stdout may be redirected elsewhere.
  // A command that does not end within 120 s (an exporter that started serving when it should
  // have refused) is killed: exit status 124, a failure, not a hung suite.
  Result cli(const std::string& args, const std::string& stdout_to = "") {
    return shell("timeout -k 5 120 " + std::string(NCCLWATCH_CLI) + " " + args, stdout_to);
  }
  // Any command line, run by /bin/sh in root_.
  Result shell(const std::string& command, const std::string& stdout_to = "") {
    return ncclwatch::test_support::run_shell("cd " + root_.string() + " && " + command, root_,
                                              stdout_to);
  }
  // A job id no other test (or other run of this one) uses.
  static std::string unique_job(const std::string& name) {
    return "cli-" + name + "-" + std::to_string(::getpid());
  }
  // A finished 2-rank fake job `job` recorded in `dir` by `ncclwatch run` (its report ignored).
  void record_job(const fs::path& dir, const std::string& job,
                  const std::string& rank_args = "--steps 2 --colls 1") {
    const Result r = cli("run --no-progress --job " + job + " --dir " + dir.string() + " -- " +
                         FAKE_LAUNCHER + " --nproc 2 -- " + FAKE_RANK + " " + rank_args);
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  // Every line on stderr is ours and starts with the prefix.
  static void expect_prefixed(const std::string& err) {
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      EXPECT_EQ(line.rfind("ncclwatch: ", 0), 0u) << "unprefixed line: " << line;
    }
  }
  // The exit status a report's findings call for (README): 3 when it holds a finding at warning
  // level or worse (WARNING / CRITICAL at the start of a line), else 0. A fake job on a busy
  // machine may warn (a rank that waited for a CPU): tests of the contract ask this, not for 0.
  static int findings_status(const std::string& report) {
    for (const char* tag : {"WARNING", "CRITICAL"}) {
      if (report.rfind(tag, 0) == 0 || has(report, std::string("\n") + tag)) return 3;
    }
    return 0;
  }
  static bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }
  ncclwatch::test_support::TempDir tmp_{"ncclwatch_cli"};
  fs::path root_ = tmp_.path();
};

}  // namespace ncclwatch::cli_test

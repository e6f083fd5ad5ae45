// `ncclwatch run`'s exit contract (README, "Exit codes"): the command's non-zero status first;
// else 1 when the report or a requested output (--json, --html, --trace) could not be produced,
// with one line naming it; else 3 with --strict and a warning; else 0. And what run says when
// nothing was recorded, and how --steps is checked against the run.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_fixture.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::cli_test::Cli;
using ncclwatch::cli_test::Result;

class CliRun : public Cli {
 protected:
  // A 2-rank fake job (20 steps, no finding at warning level) under `ncclwatch run OPTIONS`.
  Result run_job(const std::string& options, const std::string& stdout_to = "") {
    return cli("run --no-progress --dir " + (root_ / "job").string() + " " + options + " -- " +
                   job_command(),
               stdout_to);
  }
  static std::string job_command() {
    return std::string(FAKE_LAUNCHER) + " --nproc 2 -- " + FAKE_RANK + " --steps 20 --colls 1";
  }
  // Lines of `err` that contain `part`.
  static int lines_with(const std::string& err, const std::string& part) {
    int n = 0;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) n += has(line, part) ? 1 : 0;
    return n;
  }
  // Paths no output can be written to: a directory, a full device, a file under a missing
  // directory.
  std::vector<std::string> unwritable() const {
    fs::create_directories(root_ / "a-directory");
    return {(root_ / "a-directory").string(), "/dev/full",
            (root_ / "no" / "such" / "dir" / "out").string()};
  }
};

TEST_F(CliRun, AJobThatWentWellIsZeroOrWithStrictItsFindings) {
  Result r = run_job("--strict --json " + (root_ / "r.json").string());
  EXPECT_EQ(r.rc, findings_status(r.out)) << r.out << r.err;
  fs::remove_all(root_ / "job");
  Result plain = run_job("--json " + (root_ / "p.json").string());
  EXPECT_EQ(plain.rc, 0) << plain.out << plain.err;
  EXPECT_TRUE(fs::file_size(root_ / "r.json") > 0);
  expect_prefixed(r.err);
}

TEST_F(CliRun, AnOutputThatCannotBeWrittenIsExitOneNamingIt) {
  for (const char* flag : {"--json", "--html", "--trace"}) {
    for (const std::string& path : unwritable()) {
      for (const char* strict : {"", "--strict "}) {
        fs::remove_all(root_ / "job");
        Result r = run_job(std::string(strict) + flag + " " + path);
        EXPECT_EQ(r.rc, 1) << flag << " " << path << "\n" << r.err;
        EXPECT_EQ(lines_with(r.err, path), 1) << flag << " " << path << "\n" << r.err;
        EXPECT_TRUE(has(r.out, "== Ranks")) << r.out;  // the report itself is still printed
        expect_prefixed(r.err);
      }
    }
  }
}

TEST_F(CliRun, AReportThatCannotBeWrittenIsExitOne) {
  Result r = run_job("--strict", "/dev/full");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(has(r.err, "ncclwatch: cannot write the report")) << r.err;
}

TEST_F(CliRun, TheCommandsFailureComesFirst) {
  // The job records a report, then the command fails with 5; the JSON cannot be written either.
  Result r = cli("run --no-progress --strict --dir " + (root_ / "job").string() + " --json " +
                 root_.string() + " -- sh -c '" + job_command() + "; exit 5'");
  EXPECT_EQ(r.rc, 5) << r.err;
  EXPECT_TRUE(has(r.err, "exited with status 5")) << r.err;
  EXPECT_EQ(lines_with(r.err, "JSON report: cannot write " + root_.string()), 1) << r.err;
  // A command that made no NCCL call and failed: its status, and the outputs named.
  Result none = cli("run --dir " + (root_ / "none").string() + " --json " +
                    (root_ / "n.json").string() + " -- sh -c 'exit 7'");
  EXPECT_EQ(none.rc, 7) << none.err;
  EXPECT_TRUE(has(none.err, "not written: --json " + (root_ / "n.json").string())) << none.err;
}

TEST_F(CliRun, NoNcclCallWithAnOutputAskedForIsExitOne) {
  const std::string json = (root_ / "n.json").string(), trace = (root_ / "n.trace.json").string();
  Result r = cli("run --dir " + (root_ / "none").string() + " --json " + json + " --trace " +
                 trace + " -- true");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(has(r.err, "the job made no NCCL call")) << r.err;
  EXPECT_TRUE(has(r.err, "ncclwatch: not written: --json " + json + ", --trace " + trace)) << r.err;
  expect_prefixed(r.err);
}

TEST_F(CliRun, StrictWithAWarningIsThreeOnlyWhenAllElseWentWell) {
  const std::string desync = std::string(FAKE_LAUNCHER) + " --nproc 2 -- " + FAKE_RANK +
                             " --steps 3 --colls 2 --desync 1:1";
  Result strict = cli("run --strict --dir " + (root_ / "a").string() + " -- " + desync);
  EXPECT_EQ(strict.rc, 3) << strict.err;
  Result plain = cli("run --dir " + (root_ / "b").string() + " -- " + desync);
  EXPECT_EQ(plain.rc, 0) << plain.err;
  // A lost output outranks the warnings.
  Result lost =
      cli("run --strict --dir " + (root_ / "c").string() + " --html /dev/full -- " + desync);
  EXPECT_EQ(lost.rc, 1) << lost.err;
  EXPECT_EQ(lines_with(lost.err, "/dev/full"), 1) << lost.err;
}

TEST_F(CliRun, TurnedOffIsSaidAsSuch) {
  // NCCLWATCH=off in run's environment, where a user sets it.
  Result off = shell("NCCLWATCH=off " + std::string(NCCLWATCH_CLI) + " run --dir " +
                     (root_ / "off").string() + " -- " + job_command());
  EXPECT_EQ(off.rc, 0) << off.err;
  EXPECT_TRUE(has(off.err, "ncclwatch: ncclwatch was turned off (NCCLWATCH=off)")) << off.err;
  EXPECT_FALSE(has(off.err, "made no NCCL call")) << off.err;
  EXPECT_FALSE(fs::exists(root_ / "off"));
  expect_prefixed(off.err);
}

TEST_F(CliRun, ATraceDirectoryThatCannotBeMadeStopsBeforeTheJob) {
  std::ofstream(root_ / "a-file") << "x";
  const std::string dir = (root_ / "a-file" / "traces").string();
  Result r = cli("run --dir " + dir + " -- touch " + (root_ / "ran").string());
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(has(r.err, "cannot create the trace directory " + dir + ": Not a directory"))
      << r.err;
  EXPECT_FALSE(fs::exists(root_ / "ran"));
  expect_prefixed(r.err);
}

TEST_F(CliRun, StepsNeedATraceToApplyTo) {
  for (const std::string& args : {"run --steps 2 -- touch " + (root_ / "ran").string(),
                                  "report " + root_.string() + " --steps 2"}) {
    Result r = cli(args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "--steps requires --trace")) << r.err;
    expect_prefixed(r.err);
  }
  EXPECT_FALSE(fs::exists(root_ / "ran"));  // refused before running anything
}

TEST_F(CliRun, StepsBeyondTheJobSelectNothingAndWriteNothing) {
  const std::string trace = (root_ / "t.json").string();
  Result r = run_job("--trace " + trace + " --steps 100:200");
  EXPECT_EQ(r.rc, 1) << r.err;  // run: a requested output could not be produced
  EXPECT_EQ(lines_with(r.err, "--steps 100:200 selects nothing: the job has "), 1) << r.err;
  EXPECT_FALSE(fs::exists(trace));
  // report: a value that does not fit the job is a usage error.
  Result rep = cli("report " + (root_ / "job").string() + " --trace " + trace + " --steps 100");
  EXPECT_EQ(rep.rc, 2) << rep.err;
  EXPECT_TRUE(has(rep.err, "--steps 100 selects nothing")) << rep.err;
  EXPECT_FALSE(fs::exists(trace));
  // A window that overlaps the job: written, and the steps it holds said.
  Result part = cli("report " + (root_ / "job").string() + " --trace " + trace + " --steps 3:900");
  EXPECT_EQ(part.rc, findings_status(part.out)) << part.err;
  EXPECT_TRUE(std::regex_search(part.out, std::regex(R"(steps 3-(\d+) of \1)"))) << part.out;
  EXPECT_TRUE(fs::exists(trace));
}

// NCCL's WARN lines, which the shim's NCCL_DEBUG_FILE keeps off the terminal, are said after the
// job (each line as NCCL wrote it) and open the report; with NCCL_DEBUG set by the user NCCL
// writes them where the user asked and run repeats nothing.
TEST_F(CliRun, NcclWarningsAreEchoedAfterTheJob) {
  const std::string warn =
      "FAKE_NCCL_WARN='NET/IB : Got completion from peer 10.1.0.12<51224> with error 12, opcode "
      "0, len 0, vendor err 129 (Recv)' FAKE_NCCL_WARN_RANK=1 ";
  Result r = shell(warn + NCCLWATCH_CLI + " run --no-progress --dir " + (root_ / "job").string() +
                   " -- " + job_command());
  EXPECT_EQ(r.rc, 0) << r.err;
  const std::string said =
      "ncclwatch: NCCL wrote 1 WARN line(s), 1 distinct, to its debug logs in " +
      (root_ / "job").string() + " (nccl-debug.*):\n";
  ASSERT_TRUE(has(r.err, said)) << r.err;
  const std::string next = r.err.substr(r.err.find(said) + said.size());
  EXPECT_TRUE(std::regex_search(next, std::regex("^ncclwatch:   [^ :]+:[0-9]+:[0-9]+ \\[1\\] "
                                                 "init.cc:1404 NCCL WARN NET/IB : Got completion "
                                                 "from peer 10.1.0.12<51224> with error 12")))
      << r.err;
  EXPECT_LT(r.err.find("exited with status 0"), r.err.find(said)) << r.err;  // after the job
  expect_prefixed(r.err);
  // The report opens with it, tied to its rank.
  EXPECT_EQ(r.out.rfind("WARNING  [nccl] rank 1 (", 0), 0u) << r.out;
  EXPECT_TRUE(has(r.out, "\n== NCCL warnings\n")) << r.out;

  // NCCL_DEBUG of the user's own: NCCL prints to the job's stdout, nothing captured or repeated.
  Result own = shell(warn + "NCCL_DEBUG=WARN " + NCCLWATCH_CLI + " run --no-progress --dir " +
                     (root_ / "own").string() + " -- " + job_command());
  EXPECT_EQ(own.rc, 0) << own.err;
  EXPECT_FALSE(has(own.err, "NCCL wrote")) << own.err;
  EXPECT_TRUE(has(own.out, "] init.cc:1404 NCCL WARN NET/IB")) << own.out;  // the job's own line
}

// A job over two hosts sharing the trace directory: `run` on node-a reduces node-a's ranks to its
// node file, says so, and its report reads them from it (the other host's from its trace). With
// --no-reduce, or for a job on one host, no node file is written (docs/multi-node.md).
TEST_F(CliRun, ANodeOfAMultiNodeJobReducesItsOwnRanks) {
  const auto job_on = [&](const std::string& dir, const std::string& options, bool two_hosts) {
    return shell("NCCLWATCH_HOST=node-a timeout -k 5 120 " + std::string(NCCLWATCH_CLI) +
                 " run --no-progress --job two --dir " + (root_ / dir).string() + " " + options +
                 " -- " + FAKE_LAUNCHER + " --nproc 2 " +
                 (two_hosts ? "--env-rank 1 NCCLWATCH_HOST=node-b " : "") + "-- " + FAKE_RANK +
                 " --steps 20 --colls 1");
  };
  const auto node_files = [&](const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(root_ / dir))
      if (e.path().extension() == ".node") names.push_back(e.path().filename().string());
    return names;
  };
  Result r = job_on("spans", "", true);
  EXPECT_EQ(r.rc, findings_status(r.out)) << r.out << r.err;
  EXPECT_EQ(node_files("spans"), std::vector<std::string>{"ncclwatch.node-a.two.node"});
  EXPECT_TRUE(has(r.err, "ncclwatch: node-a: 1 rank(s) reduced to ")) << r.err;
  EXPECT_TRUE(has(r.out, "1 of 2 rank(s) read from node files")) << r.out;
  expect_prefixed(r.err);

  Result off = job_on("off", "--no-reduce", true);
  EXPECT_EQ(off.rc, findings_status(off.out)) << off.out << off.err;
  EXPECT_TRUE(node_files("off").empty());
  EXPECT_FALSE(has(off.err, "reduced to")) << off.err;

  Result one = job_on("one", "", false);
  EXPECT_EQ(one.rc, findings_status(one.out)) << one.out << one.err;
  EXPECT_TRUE(node_files("one").empty()) << one.err;
}

}  // namespace

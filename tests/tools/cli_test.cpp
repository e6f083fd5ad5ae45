// The CLI contract (README, "Exit codes"): 0 ok, 1 error, 2 usage, 3 findings at warning level;
// `run` passes on its command's status (128+N for a signal, named); every message of ours starts
// with "ncclwatch: ".
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli_fixture.h"
#include "gzip.h"
#include "synthetic_trace.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::cli_test::Cli;
using ncclwatch::cli_test::Result;

TEST_F(Cli, HelpIsExitZero) {
  Result r = cli("--help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("report"), std::string::npos) << r.out;
  EXPECT_EQ(cli("report --help").rc, 0);
}

TEST_F(Cli, UsageErrorsAreExitTwoWithOneLine) {
  for (const char* args : {"", "no-such-command", "report", "report --no-such-flag x", "dump",
                           "run --mode turbo -- true", "run"}) {
    Result r = cli(args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.err;
    expect_prefixed(r.err);
  }
}

TEST_F(Cli, ReportOfAMissingDirectoryIsAnError) {
  Result r = cli("report " + (root_ / "nope").string());
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("nope: No such file or directory"), std::string::npos) << r.err;
  expect_prefixed(r.err);
}

TEST_F(Cli, ReportOfADirectoryWithoutTracesIsAnError) {
  fs::create_directories(root_ / "empty");
  Result r = cli("report " + (root_ / "empty").string());
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("no rank traces"), std::string::npos) << r.err;
}

// Kineto traces are told from their content: the same report as with --kineto, no flag needed.
TEST_F(Cli, ReportReadsKinetoTracesWithoutTheFlag) {
  ncclwatch::kineto::testing::SyntheticTraceSpec spec;
  std::ofstream(root_ / "a.json") << ncclwatch::kineto::testing::synthetic_trace(spec);
  spec.rank = 1;
  std::ofstream(root_ / "b.json.gz")
      << ncclwatch::test_support::gzip(ncclwatch::kineto::testing::synthetic_trace(spec));
  const std::string files = (root_ / "a.json").string() + " " + (root_ / "b.json.gz").string();
  Result detected = cli("report " + files + " --no-progress");
  Result forced = cli("report --kineto " + files + " --no-progress");
  EXPECT_TRUE(detected.rc == 0 || detected.rc == 3) << detected.err;
  EXPECT_EQ(detected.rc, forced.rc);
  EXPECT_EQ(detected.out, forced.out);
  EXPECT_NE(detected.out.find("2 ranks"), std::string::npos) << detected.out;
  // A directory of them too.
  fs::create_directories(root_ / "k");
  fs::rename(root_ / "a.json", root_ / "k" / "a.json");
  fs::rename(root_ / "b.json.gz", root_ / "k" / "b.json.gz");
  EXPECT_EQ(cli("report " + (root_ / "k").string() + " --no-progress").out, forced.out);
}

TEST_F(Cli, ReportOfAnUnrecognisedInputIsAnError) {
  std::ofstream(root_ / "notes.txt") << "rank 3 was slow on Tuesday\n";
  Result r = cli("report " + (root_ / "notes.txt").string());
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("not an ncclwatch trace directory nor a Kineto trace"), std::string::npos)
      << r.err;
  expect_prefixed(r.err);
  // Inputs and --kineto together: one or the other.
  Result both = cli("report " + (root_ / "notes.txt").string() + " --kineto " +
                    (root_ / "notes.txt").string());
  EXPECT_EQ(both.rc, 1) << both.err;
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
}

TEST_F(Cli, RunOfAJobWithoutNcclSaysSoAndLeavesNoDirectory) {
  Result r = cli("run --dir " + (root_ / "traces").string() + " -- true");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("the job made no NCCL call"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no rank traces"), std::string::npos) << r.err;  // said once, plainly
  EXPECT_FALSE(fs::exists(root_ / "traces"));
  expect_prefixed(r.err);
}

TEST_F(Cli, RunKeepsADirectoryThatExistedBefore) {
  fs::create_directories(root_ / "mine");
  Result r = cli("run --dir " + (root_ / "mine").string() + " -- true");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::is_directory(root_ / "mine"));
}

TEST_F(Cli, RunPassesOnTheExitStatus) {
  Result r = cli("run --dir " + (root_ / "t").string() + " -- sh -c 'exit 7'");
  EXPECT_EQ(r.rc, 7) << r.err;
  EXPECT_NE(r.err.find("exited with status 7"), std::string::npos) << r.err;
}

TEST_F(Cli, RunNamesTheSignalThatKilledTheCommand) {
  Result r = cli("run --dir " + (root_ / "t").string() + " -- sh -c 'kill -TERM $$'");
  EXPECT_EQ(r.rc, 128 + 15) << r.err;
  EXPECT_NE(r.err.find("killed by signal 15 (SIGTERM"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("exited with status 143"), std::string::npos) << r.err;
}

TEST_F(Cli, RunCannotStartTheCommand) {
  Result r = cli("run --dir " + (root_ / "t").string() + " -- /nonexistent/cmd");
  EXPECT_EQ(r.rc, 127) << r.err;
  EXPECT_NE(r.err.find("cannot run"), std::string::npos) << r.err;
}

TEST_F(Cli, ReportToAFullStdoutIsAnError) {
  // A 2-rank job, then its report written to /dev/full.
  const fs::path dir = root_ / "job";
  Result r = cli("run --dir " + dir.string() + " -- " + FAKE_LAUNCHER + " --nproc 2 -- " +
                 FAKE_RANK + " --steps 2 --colls 1");
  ASSERT_EQ(r.rc, 0) << r.err;
  Result full = cli("report " + dir.string(), "/dev/full");
  EXPECT_EQ(full.rc, 1) << full.err;
  EXPECT_NE(full.err.find("cannot write the report"), std::string::npos) << full.err;
}

TEST_F(Cli, ReportExitCodeFollowsTheFindings) {
  // Exit 3 exactly when the report holds a finding at warning level or worse (the text marks
  // them WARNING / CRITICAL at the start of a line); run --strict does the same for a clean CMD.
  const fs::path dir = root_ / "job";
  Result r = cli("run --strict --dir " + dir.string() + " -- " + FAKE_LAUNCHER + " --nproc 2 -- " +
                 FAKE_RANK + " --steps 3 --colls 2");
  const bool warns = r.out.find("\nWARNING") != std::string::npos ||
                     r.out.find("\nCRITICAL") != std::string::npos ||
                     r.out.rfind("WARNING", 0) == 0 || r.out.rfind("CRITICAL", 0) == 0;
  EXPECT_EQ(r.rc, warns ? 3 : 0) << r.out << r.err;
  Result rep = cli("report " + dir.string());
  EXPECT_EQ(rep.rc, warns ? 3 : 0) << rep.out << rep.err;
}

TEST_F(Cli, ADesyncIsFindingsExitThreeAndStrictRunToo) {
  const fs::path dir = root_ / "job";
  const std::string job = std::string(FAKE_LAUNCHER) + " --nproc 2 -- " + FAKE_RANK +
                          " --steps 3 --colls 2 --desync 1:1";
  Result plain = cli("run --dir " + dir.string() + " -- " + job);
  EXPECT_EQ(plain.rc, 0) << plain.err;  // without --strict: the command's status
  EXPECT_NE(plain.out.find("CRITICAL [collector] desync"), std::string::npos) << plain.out;
  Result rep = cli("report " + dir.string());
  EXPECT_EQ(rep.rc, 3) << rep.err;
  fs::remove_all(dir);
  Result strict = cli("run --strict --dir " + dir.string() + " -- " + job);
  EXPECT_EQ(strict.rc, 3) << strict.err;
}

}  // namespace

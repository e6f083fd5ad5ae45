// Every subcommand as a user meets it: its error paths, its exit codes (README, "Exit codes")
// and one message contract ("ncclwatch: " starts every line on stderr). Plus what the command
// line itself answers: `ncclwatch` alone, an unknown command, `--version`.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "cli_fixture.h"
#include "ncclwatch/format.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::cli_test::Cli;
using ncclwatch::cli_test::Result;

// --- the command line itself

TEST_F(Cli, AloneItPrintsTheUsage) {
  Result r = cli("");
  EXPECT_EQ(r.rc, 2);  // a usage error: no command given (README)
  EXPECT_TRUE(has(r.out, "Usage: ncclwatch")) << r.out;
  for (const char* command :
       {"run", "report", "reduce", "diff", "status", "exporter", "collect", "dump", "topo", "demo"})
    EXPECT_TRUE(has(r.out, command)) << command << "\n" << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(Cli, AnUnknownCommandIsNamedWithTheCommands) {
  Result r = cli("reprot /tmp");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(has(r.err, "unknown command 'reprot'")) << r.err;
  EXPECT_TRUE(has(r.err, "collect, demo, diff, dump, exporter, reduce, report, run, status, topo"))
      << r.err;
  EXPECT_FALSE(has(r.err, "A subcommand is required")) << r.err;
  expect_prefixed(r.err);
}

TEST_F(Cli, VersionNamesTheRecordFormatAndTheBuild) {
  Result r = cli("--version");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(^ncclwatch \d+\.\d+\.\d+ \(record format \d+, build [^ )]+\)\n$)")))
      << r.out;
  EXPECT_TRUE(has(r.out, "record format " + std::to_string(ncclwatch::format::kLayoutVersion)))
      << r.out;
}

// --- report

// A directory with two jobs: --job selects one without the warning meant for not choosing.
TEST_F(Cli, ReportJobSelectsWithoutWarning) {
  const fs::path dir = root_ / "two";
  const std::string a = unique_job("a"), b = unique_job("b");
  record_job(dir, a, "--steps 20 --colls 1");
  record_job(dir, b, "--steps 20 --colls 1");
  Result chosen = cli("report --no-progress " + dir.string() + " --job " + a);
  EXPECT_EQ(chosen.rc, findings_status(chosen.out)) << chosen.out << chosen.err;
  EXPECT_FALSE(has(chosen.out + chosen.err, "select one with --job")) << chosen.out;
  EXPECT_FALSE(has(chosen.out, "input problems")) << chosen.out;
  // Not choosing is still said, as a warning.
  Result unchosen = cli("report --no-progress " + dir.string());
  EXPECT_EQ(unchosen.rc, 3) << unchosen.out << unchosen.err;
  EXPECT_TRUE(has(unchosen.out, "select one with --job")) << unchosen.out;
}

// --- the shim at exit

// Lines of `err` that say where the traces are.
int location_lines(const std::string& err) {
  static const std::regex line(R"((^|\n)ncclwatch: traces in )");
  return static_cast<int>(
      std::distance(std::sregex_iterator(err.begin(), err.end(), line), std::sregex_iterator()));
}

// A plain LD_PRELOAD run says once, at exit, where its traces went (one process per node, here 2
// ranks of one node): ./ncclwatch-local-<pid of the launcher> when no launcher names the job.
// Under `ncclwatch run` the shims keep quiet and run says it: once either way.
TEST_F(Cli, TheTraceLocationIsSaidOnce) {
  const std::string job =
      std::string(FAKE_LAUNCHER) + " --nproc 2 -- " + FAKE_RANK + " --steps 2 --colls 1";
  const std::string clean_env =
      "env -u NCCLWATCH_DIR -u NCCLWATCH_JOB -u TORCHELASTIC_RUN_ID -u SLURM_JOB_ID -u PBS_JOBID "
      "-u LSB_JOBID -u PMIX_NAMESPACE -u OMPI_MCA_orte_ess_jobid LD_PRELOAD=" +
      std::string(NCCLWATCH_SHIM) + " ";
  Result plain = shell(clean_env + job);
  EXPECT_EQ(plain.rc, 0) << plain.err;
  EXPECT_EQ(location_lines(plain.err), 1) << plain.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      plain.err, m,
      std::regex(R"(ncclwatch: traces in (\S+/ncclwatch-local-\d+) \(ncclwatch report \1\)\n)")))
      << plain.err;
  EXPECT_EQ(fs::path(m[1].str()).parent_path(), fs::canonical(root_)) << plain.err;
  EXPECT_TRUE(fs::is_directory(m[1].str())) << plain.err;
  expect_prefixed(plain.err);

  Result quiet = shell("NCCLWATCH_EXIT_LINE=off " + clean_env + job);
  EXPECT_EQ(quiet.rc, 0) << quiet.err;
  EXPECT_EQ(location_lines(quiet.err), 0) << quiet.err;

  Result run = cli("run --no-progress --dir " + (root_ / "r").string() + " -- " + job);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(location_lines(run.err), 1) << run.err;
  EXPECT_TRUE(has(run.err, "ncclwatch: traces in " + (root_ / "r").string())) << run.err;
}

// --- status

TEST_F(Cli, StatusWithNothingToShowSaysSoAndFails) {
  Result r =
      cli("status --job no-such-job-" + std::to_string(getpid()) + " --dir " + root_.string());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.err, "no ncclwatch job found named no-such-job")) << r.err;
  EXPECT_EQ(r.out, "");  // no empty table
  expect_prefixed(r.err);
}

TEST_F(Cli, StatusOfAFinishedJobShowsItsRanks) {
  const fs::path dir = root_ / "job";
  const std::string job = unique_job("status");
  record_job(dir, job);
  Result r = cli("status --job " + job + " --dir " + dir.string() + " --json " +
                 (root_ / "s.json").string());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, " rank  host")) << r.out;
  EXPECT_TRUE(fs::file_size(root_ / "s.json") > 0);
  expect_prefixed(r.err);
  // Its JSON cannot be written: an error, said with the path.
  Result full = cli("status --job " + job + " --dir " + dir.string() + " --json /dev/full");
  EXPECT_EQ(full.rc, 1) << full.err;
  EXPECT_TRUE(has(full.err, "ncclwatch: cannot write /dev/full")) << full.err;
  expect_prefixed(full.err);
}

TEST_F(Cli, StatusUsageErrors) {
  for (const char* args : {"status --watch 0", "status --watch x", "status --bogus"}) {
    Result r = cli(args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.err;
    expect_prefixed(r.err);
  }
}

// --- exporter

TEST_F(Cli, ExporterChecksListenLikeAnyValue) {
  for (const char* value : {"nonsense", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:-1",
                            "localhost:9717", "1.2.3:9717", "[::1:9717", ":9717"}) {
    Result r = cli(std::string("exporter --listen '") + value + "'");
    EXPECT_EQ(r.rc, 2) << value << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "--listen")) << r.err;
    EXPECT_TRUE(has(r.err, "expected ADDR:PORT")) << r.err;
    EXPECT_FALSE(has(r.err, "CivetServer")) << r.err;
    expect_prefixed(r.err);
  }
  for (const char* args : {"exporter --histograms nope", "exporter --interval 0"}) {
    Result r = cli(args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.err;
    expect_prefixed(r.err);
  }
}

TEST_F(Cli, ExporterNamesABusyPort) {
  // A port held by a listening socket of ours.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t size = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size), 0);
  const int port = ntohs(a.sin_port);
  Result r = cli("exporter --listen 127.0.0.1:" + std::to_string(port));
  ::close(fd);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(has(r.err, "port " + std::to_string(port) + " on 127.0.0.1 is already in use"))
      << r.err;
  EXPECT_FALSE(has(r.err, "CivetServer")) << r.err;
  expect_prefixed(r.err);
}

TEST_F(Cli, ExporterRefusesAnAddressThisMachineDoesNotHave) {
  // TEST-NET-1 (RFC 5737): never assigned to a machine.
  Result r = cli("exporter --listen 192.0.2.1:9717");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(has(r.err, "192.0.2.1 is not an address of this machine")) << r.err;
  expect_prefixed(r.err);
}

TEST_F(Cli, ExporterOnceServesAFinishedJobFromItsDirectory) {
  const fs::path dir = root_ / "job";
  const std::string job = unique_job("exporter");
  record_job(dir, job);
  Result r = cli("exporter --once --dir " + dir.string() + " --job " + job);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "ncclwatch_rank_live{job=\"" + job)) << r.out;
  expect_prefixed(r.err);
  Result full = cli("exporter --once --dir " + dir.string() + " --job " + job, "/dev/full");
  EXPECT_EQ(full.rc, 1) << full.err;
  EXPECT_TRUE(has(full.err, "cannot write")) << full.err;
  expect_prefixed(full.err);
}

// --- dump

TEST_F(Cli, DumpErrorPaths) {
  Result missing = cli("dump " + (root_ / "nope.trace").string());
  EXPECT_EQ(missing.rc, 1) << missing.err;
  EXPECT_TRUE(has(missing.err, "No such file or directory")) << missing.err;
  expect_prefixed(missing.err);

  std::ofstream(root_ / "junk.trace") << "not a trace at all, not even close to 64 bytes long";
  Result junk = cli("dump " + (root_ / "junk.trace").string());
  EXPECT_EQ(junk.rc, 1) << junk.err;
  expect_prefixed(junk.err);

  Result kinds = cli("dump " + (root_ / "junk.trace").string() + " --kinds call,bogus");
  EXPECT_EQ(kinds.rc, 2) << kinds.err;
  EXPECT_TRUE(has(kinds.err, "ncclwatch: --kinds: unknown record kind 'bogus'")) << kinds.err;
  expect_prefixed(kinds.err);
}

TEST_F(Cli, DumpOfARecordedTrace) {
  const fs::path dir = root_ / "job";
  record_job(dir, unique_job("dump"));
  fs::path trace;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".trace") trace = e.path();
  ASSERT_FALSE(trace.empty());
  Result r = cli("dump --header --kinds call " + trace.string());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "\"kind\":\"call\"")) << r.out.substr(0, 400);
  EXPECT_TRUE(has(r.err, "ncclwatch: " + trace.string() + ": ")) << r.err;
  expect_prefixed(r.err);
  Result full = cli("dump " + trace.string(), "/dev/full");
  EXPECT_EQ(full.rc, 1) << full.err;
  EXPECT_TRUE(has(full.err, "cannot write the output")) << full.err;
  expect_prefixed(full.err);
}

// --- collect

TEST_F(Cli, CollectWithNothingToDoIsNotAnError) {
  Result r = cli("collect --job no-such-job-" + std::to_string(getpid()));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "no leftover ncclwatch segments of job no-such-job")) << r.out;
  expect_prefixed(r.err);
  EXPECT_EQ(cli("collect --bogus").rc, 2);
}

// Killed ranks leave their segments; with their trace directory gone and no --dir, they cannot
// be salvaged: exit 1, one line per segment and one summary line.
TEST_F(Cli, CollectThatCannotSalvageFails) {
  const std::string job = unique_job("collect");
  const fs::path dir = root_ / "gone";
  Result killed =
      shell("LD_PRELOAD=" + std::string(NCCLWATCH_SHIM) + " NCCLWATCH_DIR=" + dir.string() +
            " NCCLWATCH_JOB=" + job + " " + FAKE_LAUNCHER + " --nproc 2 -- " + FAKE_RANK +
            " --steps 4 --colls 1 --exit 1:2:kill");
  ASSERT_NE(killed.rc, 0) << killed.err;
  fs::remove_all(dir);
  Result r = cli("collect --job " + job);
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "failed: cannot open trace dir")) << r.out;
  EXPECT_TRUE(has(r.err, "ncclwatch: 2 segment(s) could not be salvaged")) << r.err;
  expect_prefixed(r.err);
  // Cleaned up with --dir: salvaged there, segments gone.
  Result again = cli("collect --job " + job + " --dir " + (root_ / "salvaged").string());
  EXPECT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_TRUE(has(cli("collect --job " + job).out, "no leftover")) << again.out;
}

}  // namespace

// Runs one end-to-end scenario: `ncclwatch run --dir D --json D/report.json [run args] --
// fake_launcher --nproc 4 [launcher env] -- fake_train --steps N [workload] [train args]`, with
// libncclwatch.so preloaded over the fake CUDA/CUPTI/NCCL, and returns the exit status, the
// JSON report and the combined output. Paths come from the test's compile definitions.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/node_note.h"
#include "../support/report_verdicts.h"

namespace ncclwatch::scenarios {

struct Scenario {
  std::vector<std::string> workload;      // fake_train's timing options
  std::vector<std::string> train_args;    // scenario options (--stall ...)
  std::vector<std::string> run_args;      // before "--": --mode ...
  std::vector<std::string> launcher_env;  // --env-rank R KEY=VAL pairs, flattened
  int steps = 12;
};

struct Result {
  int status = -1;
  nlohmann::json report;
  std::string log;
  std::string dir;
};

// Every scenario of this process in one private directory (mkdtemp), removed at exit: a suite's
// traces are tens of MB, and they were left behind in /tmp under predictable names.
inline const std::string& scenario_root() {
  struct Root {
    std::string path;
    Root() {
      std::string templ = ::testing::TempDir() + "scenario.XXXXXX";
      if (mkdtemp(templ.data()) != nullptr) path = templ;
    }
    // Kept when a test failed, and named on stderr: the traces, node files and reports of the
    // failing run are the evidence (a failure under load may not come back).
    ~Root() {
      if (path.empty()) return;
      if (::testing::UnitTest::GetInstance()->failed_test_count() > 0) {
        std::fprintf(stderr, "kept: %s\n", path.c_str());
        return;
      }
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Root root;
  return root.path;
}

// `ncclwatch ARGS...` in a child with NCCLWATCH_REPORT_LOAD=`load` and wide lines, its stdout in
// `out` (stderr too with `with_stderr`, else dropped); its exit status (-1: did not exit).
inline int ncclwatch_cli(std::vector<std::string> args, const std::string& out,
                         const std::string& load, bool with_stderr) {
  args.insert(args.begin(), NCCLWATCH_EXE);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = open("/dev/null", O_WRONLY);
    if (fd < 0 || null < 0) _exit(98);
    dup2(fd, 1);
    dup2(with_stderr ? fd : null, 2);
    setenv("COLUMNS", "100000", 1);
    setenv("NCCLWATCH_REPORT_LOAD", load.c_str(), 1);
    std::vector<char*> cargv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(99);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `ncclwatch report DIR --json DIR-NAME.json` with NCCLWATCH_REPORT_LOAD=`load`: its stdout
// (kept beside DIR, not in it: the report reads every file there).
inline std::string report_of(const std::string& dir, const std::string& name,
                             const std::string& load) {
  const std::string out = dir + "-" + name + ".txt";
  const int rc =
      ncclwatch_cli({"report", dir, "--json", dir + "-" + name + ".json"}, out, load, false);
  EXPECT_TRUE(rc >= 0 && rc <= 3) << "report of " << dir;
  std::ifstream in(out);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The report with each rank's GPU records dropped once digested (the default, lean) is the
// report with them kept (NCCLWATCH_REPORT_LOAD=whole), byte for byte: text and JSON.
inline void expect_lean_report_is_whole(const std::string& dir) {
  const std::string lean = report_of(dir, "lean", "lean");
  const std::string whole = report_of(dir, "whole", "whole");
  EXPECT_FALSE(lean.empty()) << dir;
  EXPECT_EQ(lean, whole) << dir;
  const std::string lean_json = file_text(dir + "-lean.json");
  EXPECT_FALSE(lean_json.empty()) << dir;
  EXPECT_TRUE(lean_json == file_text(dir + "-whole.json")) << dir << ": lean != whole JSON";
}

// `ncclwatch reduce DIR --all-hosts [more]`: its exit status; its output in `out`.
inline int reduce_of(const std::string& dir, std::string& out,
                     const std::vector<std::string>& more = {}) {
  const std::string path = dir + "-reduce.txt";
  std::vector<std::string> args = {"reduce", dir, "--all-hosts"};
  args.insert(args.end(), more.begin(), more.end());
  const int rc = ncclwatch_cli(args, path, "lean", true);
  out = file_text(path);
  return rc;
}

// The report merged from node files (`ncclwatch reduce`) is the lean report but for the note
// saying so: text and JSON, with the traces beside the node files and without them (the traces
// stayed on their nodes). A run whose ranks all have capture windows has nothing to reduce.
// Node files with compute times on a 1 µs grid (lossy) give the same verdicts, and say so.
inline void expect_node_report_is_lean(const std::string& dir) {
  namespace fs = std::filesystem;
  std::string said;
  ASSERT_EQ(reduce_of(dir, said), 0) << said;
  std::vector<fs::path> node_files, traces;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".node") node_files.push_back(e.path());
    if (e.path().extension() == ".trace") traces.push_back(e.path());
  }
  if (node_files.empty()) {
    EXPECT_NE(said.find("nothing to reduce"), std::string::npos) << said;
    return;
  }
  const std::string lean = test_support::without_node_note(file_text(dir + "-lean.txt"));
  const nlohmann::json lean_json = test_support::without_node_note(
      nlohmann::json::parse(file_text(dir + "-lean.json"), nullptr, false));
  // Without the traces one figure may differ, as docs/multi-node.md says: a rank that
  // StepDetector::agree() gave the job's steps cannot have its compute kernels counted again
  // under them; the report says so, and its verdicts stay those of the traces.
  constexpr const char* kNotReadAgain = "its GPU records were dropped and cannot be read again";
  const auto expect_same = [&](const std::string& name, bool traces_here) {
    const std::string merged = report_of(dir, name, "lean");
    EXPECT_NE(merged.find(test_support::kNodeFileNote), std::string::npos) << dir << ": " << name;
    const nlohmann::json j =
        nlohmann::json::parse(file_text(dir + "-" + name + ".json"), nullptr, false);
    if (!traces_here && merged.find(kNotReadAgain) != std::string::npos) {
      for (const char* verdict : {"stragglers", "hang", "desync", "incomplete"})
        EXPECT_EQ(j[verdict], lean_json[verdict]) << dir << ": " << name << ": " << verdict;
      for (const char* part : {"row", "severity"})
        EXPECT_EQ(j["pattern"][part], lean_json["pattern"][part]) << dir << ": " << name;
      return;
    }
    EXPECT_EQ(test_support::without_node_note(merged), lean) << dir << ": " << name;
    EXPECT_TRUE(test_support::without_node_note(j) == lean_json)
        << dir << ": " << name << " != lean JSON";
  };
  expect_same("node", true);
  const fs::path away = dir + "-traces";
  fs::create_directory(away);
  for (const fs::path& t : traces) fs::rename(t, away / t.filename());
  expect_same("node-alone", false);
  for (const fs::path& t : traces) fs::rename(away / t.filename(), t);

  ASSERT_EQ(reduce_of(dir, said, {"--compute-resolution-ns", "1000"}), 0) << said;
  const std::string grid = report_of(dir, "node-grid", "lean");
  EXPECT_NE(grid.find("compute times rounded to 1000 ns"), std::string::npos) << dir << grid;
  const nlohmann::json grid_json = test_support::without_node_note(
      nlohmann::json::parse(file_text(dir + "-node-grid.json"), nullptr, false));
  EXPECT_EQ(test_support::verdicts_of(grid_json), test_support::verdicts_of(lean_json)) << dir;
  if (::testing::Test::HasFailure()) return;  // the node files kept with the run (scenario_root)
  for (const fs::path& n : node_files) fs::remove(n);
}

inline Result run_scenario(const Scenario& s) {
  static int counter = 0;
  Result r;
  EXPECT_FALSE(scenario_root().empty()) << "mkdtemp failed";
  r.dir = scenario_root() + "/" + std::to_string(counter++);
  std::error_code ec;
  EXPECT_TRUE(std::filesystem::create_directory(r.dir, ec)) << r.dir << ": " << ec.message();
  std::vector<std::string> argv = {NCCLWATCH_EXE, "run",    "--dir",
                                   r.dir,         "--json", r.dir + "/report.json"};
  argv.insert(argv.end(), s.run_args.begin(), s.run_args.end());
  argv.insert(argv.end(), {"--", FAKE_LAUNCHER, "--nproc", "4"});
  argv.insert(argv.end(), s.launcher_env.begin(), s.launcher_env.end());
  argv.insert(argv.end(), {"--", FAKE_TRAIN, "--steps", std::to_string(s.steps)});
  argv.insert(argv.end(), s.workload.begin(), s.workload.end());
  argv.insert(argv.end(), s.train_args.begin(), s.train_args.end());
  const std::string log = r.dir + "/log.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(98);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("NCCLWATCH_LIB", SHIM_LIB, 1);
    setenv("COLUMNS", "100000", 1);  // the tests read each finding from one line: no wrapping
    // The fake GPU dates launches from the host's virtual position (declared host work such as
    // --stall included), so a descheduled host on a loaded machine cannot shift the GPU timeline
    // the verdicts are read from (host timestamps stay real).
    setenv("NCCLWATCH_FAKE_VIRTUAL_HOST", "1", 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(99);
  }
  waitpid(pid, &r.status, 0);
  std::ifstream lf(log);
  r.log.assign(std::istreambuf_iterator<char>(lf), {});
  std::ifstream jf(r.dir + "/report.json");
  if (jf) r.report = nlohmann::json::parse(jf, nullptr, false);
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.log;
  EXPECT_TRUE(r.report.is_object()) << r.log;
  expect_lean_report_is_whole(r.dir);
  expect_node_report_is_lean(r.dir);
  return r;
}

}  // namespace ncclwatch::scenarios

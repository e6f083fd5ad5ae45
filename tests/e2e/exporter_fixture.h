// Shared by the exporter's multi-process tests: a fake job under `ncclwatch run` (its own process
// group, killed at the end), `ncclwatch exporter` on a free loopback port, scrapes with curl, and
// a parser of the Prometheus text exposition. Everything is polled with generous deadlines (a
// loaded 2-core machine); nothing is left running.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ncclwatch::e2e {

namespace fs = std::filesystem;

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One series line of the exposition: "name{a="x",b="y"} value".
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

inline std::vector<Sample> parse_exposition(const std::string& text) {
  std::vector<Sample> out;
  static const std::regex line_re(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$)");
  static const std::regex label_re(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.empty() || line[0] == '#' || !std::regex_match(line, m, line_re)) continue;
    Sample s;
    s.name = m[1];
    const std::string labels = m[3];
    for (std::sregex_iterator it(labels.begin(), labels.end(), label_re), end; it != end; ++it)
      s.labels[(*it)[1]] = (*it)[2];
    s.value = std::strtod(m[4].str().c_str(), nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

// The value of `name` for rank `rank` (first match), or NaN.
inline double rank_value(const std::vector<Sample>& samples, const std::string& name, int rank,
                         const std::map<std::string, std::string>& extra = {}) {
  for (const auto& s : samples) {
    if (s.name != name) continue;
    auto it = s.labels.find("rank");
    if (it == s.labels.end() || it->second != std::to_string(rank)) continue;
    bool ok = true;
    for (const auto& [k, v] : extra) {
      auto e = s.labels.find(k);
      ok = ok && e != s.labels.end() && e->second == v;
    }
    if (ok) return s.value;
  }
  return std::nan("");
}

class ExporterJob : public ::testing::Test {
 protected:
  static constexpr auto kDeadline = std::chrono::seconds(240);

  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "ncclwatch_exporter.XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    root_ = templ;
    dir_ = root_ / "traces";
    job_ =
        "exp-" + std::to_string(getpid()) + "-" +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()).substr(0, 20);
  }
  void TearDown() override {
    for (pid_t g : groups_) kill(-g, SIGTERM);
    for (pid_t g : groups_) {
      // The job's ranks may sit in a blocked fake collective: after a grace period, SIGKILL.
      for (int i = 0; i < 100 && waitpid(g, nullptr, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      kill(-g, SIGKILL);
      waitpid(g, nullptr, 0);
    }
    groups_.clear();
    sh(std::string(NCCLWATCH_CLI) + " collect --job " + job_ + " --dir " + dir_.string() +
       " >/dev/null 2>&1");
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  static int sh(const std::string& cmd) { return std::system(cmd.c_str()); }

  // Forks `argv` in a new process group with stdout+stderr to `log`; the group is killed at the
  // end of the test.
  pid_t spawn(const std::vector<std::string>& argv, const fs::path& log,
              const std::vector<std::string>& env = {}) {
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      if (!freopen(log.c_str(), "w", stdout) || dup2(fileno(stdout), 2) < 0) _exit(90);
      for (const auto& kv : env) putenv(strdup(kv.c_str()));
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(91);
    }
    setpgid(pid, pid);
    groups_.push_back(pid);
    return pid;
  }

  // `ncclwatch run` of a 4-rank fake job (fake_train or fake_rank) with the shim preloaded.
  void start_job(const std::string& program, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        NCCLWATCH_CLI, "run",     "--dir", dir_.string(), "--",
        FAKE_LAUNCHER, "--nproc", "4",     "--env",       "FAKE_NCCL_TIMEOUT_S=3600",
        "--",          program};
    argv.insert(argv.end(), args.begin(), args.end());
    spawn(
        argv, root_ / "job.log",
        {"NCCLWATCH_LIB=" SHIM_LIBRARY, "NCCLWATCH_JOB=" + job_, "NCCLWATCH_FAKE_VIRTUAL_HOST=1"});
  }

  // `ncclwatch exporter --job` on a free loopback port; returns the port (0 on failure).
  int start_exporter() {
    const fs::path log = root_ / "exporter.log";
    spawn(
        {NCCLWATCH_CLI, "exporter", "--job", job_, "--listen", "127.0.0.1:0", "--interval", "0.25"},
        log);
    static const std::regex port_re(R"(serving http://127\.0\.0\.1:(\d+)/metrics)");
    return poll([&] {
      std::smatch m;
      const std::string text = slurp(log);
      return std::regex_search(text, m, port_re) ? std::stoi(m[1]) : 0;
    });
  }

  // GET url with curl; empty on failure.
  std::string get(const std::string& url) {
    const fs::path out = root_ / "curl.out";
    const int rc = sh("curl -s -f --max-time 20 -o " + out.string() + " '" + url + "'");
    return rc == 0 ? slurp(out) : std::string();
  }

  std::vector<Sample> scrape(int port) {
    return parse_exposition(get("http://127.0.0.1:" + std::to_string(port) + "/metrics"));
  }

  // Calls f until it returns a non-zero value or the deadline passes.
  template <typename F>
  auto poll(F f) -> decltype(f()) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    for (;;) {
      auto v = f();
      if (v || std::chrono::steady_clock::now() > deadline) return v;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }

  fs::path root_, dir_;
  std::string job_;
  std::vector<pid_t> groups_;
};

}  // namespace ncclwatch::e2e

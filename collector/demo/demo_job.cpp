#include "demo/demo_job.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "model/message.h"
#include "ncclwatch/settings_table.h"
#include "pipeline/report_job.h"
#include "trace/salvage.h"

extern char** environ;

namespace ncclwatch::demo {

namespace {

namespace fs = std::filesystem;
using settings::Id;

const char* program_file(Program p) {
  return p == Program::kTrain ? "fake_train" : "fake_rank";
}

// The environment of the job: ours, with the preload, the private library directory (the
// stand-in libnccl, libcudart and libcupti are found only through it, and only by this job) and
// the shim's trace directory and job id.
std::vector<std::string> job_environment(const DemoRequest& req, const std::string& dir,
                                         const std::string& job) {
  const std::string lib_dir = (fs::path(req.demo_dir) / "lib").string();
  std::vector<std::pair<std::string, std::string>> set = {{"LD_PRELOAD", req.shim},
                                                          {"LD_LIBRARY_PATH", lib_dir},
                                                          {settings::name(Id::kDir), dir},
                                                          {settings::name(Id::kJob), job},
                                                          {settings::name(Id::kExitLine), "off"}};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (auto& [k, v] : set) replaced = replaced || k == key;
    if (!replaced) env.push_back(kv);
  }
  for (auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

std::vector<std::string> job_argv(const DemoRequest& req) {
  const Scenario& s = *req.scenario;
  const fs::path d = req.demo_dir;
  std::vector<std::string> argv = {(d / "fake_launcher").string(), "--nproc",
                                   std::to_string(kRanks)};
  argv.insert(argv.end(), s.launcher_args.begin(), s.launcher_args.end());
  argv.insert(argv.end(),
              {"--", (d / program_file(s.program)).string(), "--steps", std::to_string(s.steps)});
  argv.insert(argv.end(), s.program_args.begin(), s.program_args.end());
  return argv;
}

// Starts the job with its output in `log`; its wait status (a fork/exec failure reads as exit
// status 127). Ctrl-C reaches the job (same process group) and ends it; we outlive it to clean up.
int run_job(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& log) {
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return 127 << 8;
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  struct sigaction ignore {
  }, old_int{}, old_term{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &ignore, &old_term);
  int status = 127 << 8;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return status;
}

// The last lines of the job's output, for the message that says it failed.
std::string log_tail(const std::string& log, std::size_t lines) {
  std::ifstream in(log);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += "  " + all[i] + "\n";
  return out;
}

// The trace directory: the one asked for (made, and empty: traces of another run would join this
// job's), else a fresh temporary one. nullopt after a line on `err`.
std::optional<std::string> trace_dir(const DemoRequest& req, std::FILE* err) {
  std::error_code ec;
  if (req.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ =
        (fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / "ncclwatch-demo-XXXXXX")
            .string();
    if (mkdtemp(templ.data()) == nullptr) {
      model::say(err, fmt::format("demo: cannot make a directory like {}: {}", templ,
                                  std::strerror(errno)));
      return std::nullopt;
    }
    return templ;
  }
  fs::create_directories(req.dir, ec);
  if (ec) {
    model::say(err, fmt::format("demo: cannot create {}: {}", req.dir, ec.message()));
    return std::nullopt;
  }
  if (!fs::is_empty(req.dir, ec) || ec) {
    model::say(err, fmt::format("demo: {} is not an empty directory (give a new one)", req.dir));
    return std::nullopt;
  }
  return fs::absolute(req.dir, ec).lexically_normal().string();
}

// The job ran: salvage what a killed rank left, then the report. The exit status.
int report(const DemoRequest& req, const std::string& dir, const std::string& job, int status,
           const std::string& log, std::FILE* out, std::FILE* err) {
  trace::SalvageOptions salvage;
  salvage.dir = dir;
  for (const auto& r : trace::salvage_job(job, salvage)) model::say(err, trace::describe(r));
  const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  if ((failed && !req.scenario->job_fails) || pipeline::no_rank_traces(dir)) {
    model::say(err, fmt::format("demo: the simulated job {} (status {:#x}); its last output:",
                                failed ? "failed" : "recorded nothing", status));
    std::fputs(log_tail(log, 20).c_str(), err);
    return 1;
  }
  pipeline::ReportRequest r;
  r.dir = dir;
  r.job = job;
  r.html_path = req.html_path;
  r.json_path = req.json_path;
  r.trace_path = req.trace_path;
  r.progress = req.progress;
  r.simulated = simulated_line(*req.scenario);
  const pipeline::ReportStatus rc = pipeline::report_job(r, out, err);
  const bool ok = rc == pipeline::ReportStatus::kClean || rc == pipeline::ReportStatus::kFindings;
  if (ok) {
    std::fprintf(out,
                 "\nSIMULATED: this report is of a stand-in job (ncclwatch demo %s), not of a "
                 "GPU; the page is %s. On a real job: ncclwatch run -- torchrun ... (README)\n",
                 std::string(req.scenario->name).c_str(), req.html_path.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

std::string check_demo_dir(const std::string& demo_dir) {
  const fs::path d = demo_dir;
  for (const fs::path& p : {d / "fake_launcher", d / "fake_train", d / "fake_rank"}) {
    if (access(p.c_str(), X_OK) != 0)
      return fmt::format("the demo's program {} is missing ({})", p.string(), std::strerror(errno));
  }
  for (const char* lib : {"libnccl.so.2", "libcudart.so.13", "libcupti.so.13"}) {
    if (access((d / "lib" / lib).c_str(), R_OK) != 0)
      return fmt::format("the demo's library {} is missing ({})", (d / "lib" / lib).string(),
                         std::strerror(errno));
  }
  return "";
}

int run_demo(const DemoRequest& req, std::FILE* out, std::FILE* err) {
  const std::optional<std::string> dir = trace_dir(req, err);
  if (!dir) return 1;
  const std::string job = demo_job_id(*req.scenario);
  std::fprintf(out, "%s\n\n", simulated_line(*req.scenario).c_str());
  std::fflush(out);
  const std::string log = (fs::path(*dir) / "demo-job.log").string();
  const int status = run_job(job_argv(req), job_environment(req, *dir, job), log);
  const int rc = report(req, *dir, job, status, log, out, err);
  if (req.dir.empty()) {
    std::error_code ec;
    fs::remove_all(*dir, ec);
  }
  return rc;
}

}  // namespace ncclwatch::demo

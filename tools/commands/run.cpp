// `ncclwatch run [--dir DIR] [--mode full|lite|host] [--job ID] [--json FILE] [--html FILE]
// [--trace FILE [--steps A:B]] [--strict] [--no-reduce] -- CMD ARGS...`: runs CMD (torchrun,
// mpirun, srun, a plain program) with libncclwatch.so preloaded, forwards SIGINT/SIGTERM, salvages
// what dead ranks left in shared memory, reduces this node's ranks to its node file when the job
// spans nodes (as `ncclwatch reduce` does), and prints the report. Same report as
// `LD_PRELOAD=libncclwatch.so CMD; ncclwatch report DIR`. Exit status (README): CMD's when it
// failed, else 1 when the report or a requested output could not be produced, else 3 with
// --strict and a warning, else 0.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "command.h"
#include "install_paths.h"
#include "live/py_spy.h"
#include "live/stack_taker.h"
#include "live/stack_watch.h"
#include "live/status_reader.h"
#include "ncclwatch/names.h"
#include "ncclwatch/settings_table.h"
#include "pipeline/report_job.h"
#include "reduce/node_reduce.h"
#include "steps_option.h"
#include "topology/nccl_warning_report.h"

#include "trace/job_loader.h"
#include "trace/salvage.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::settings::Id;
using ncclwatch::settings::name;
using ncclwatch::tools::say;

// The value of a setting (ncclwatch/settings_table.h) when set and not empty, else nullptr.
const char* setting(Id id) {
  const char* v = std::getenv(name(id));
  return v != nullptr && *v != '\0' ? v : nullptr;
}

struct RunArgs {
  std::string dir, mode, job, json, lib, trace, steps, html;
  bool strict = false;
  bool progress = true;
  bool reduce = true;
  std::vector<std::string> command;
};

volatile sig_atomic_t g_child = 0;

// A terminal's Ctrl-C already reaches the whole foreground process group, CMD included; a
// signal sent to us alone (kill, a batch system) is passed on.
void forward(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && (info == nullptr || info->si_code != SI_KERNEL)) kill(g_child, sig);
}

std::string default_job() {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return "run-" + std::string(stamp) + "-" + std::to_string(getpid());
}

// `ncclwatch run --help`'s footer: the variables run reads, as the settings table documents them.
std::string environment_help() {
  std::string text = "Environment (every variable: README, Settings):";
  for (const auto& v : ncclwatch::settings::kVariables) {
    if (v.reader != ncclwatch::settings::Reader::kCli &&
        v.reader != ncclwatch::settings::Reader::kShimAndCli)
      continue;
    text += "\n  " + std::string(v.name) + ": " + std::string(v.doc);
  }
  return text;
}

// One line on how CMD ended: its exit status, or the signal that killed it, by name.
void describe_exit(const std::string& cmd, int status, int rc) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    say("{} was killed by signal {} (SIG{}, {}); exit status {}", cmd, sig,
        abbrev != nullptr ? abbrev : "?", strsignal(sig), rc);
  } else {
    say("{} exited with status {}", cmd, rc);
  }
}

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The outputs asked for besides the report on stdout ("--json FILE, --trace FILE"), for the line
// that says they were not written.
std::string requested_outputs(const RunArgs& args) {
  std::string out;
  for (const auto& [flag, path] :
       {std::pair{"--json", &args.json}, {"--html", &args.html}, {"--trace", &args.trace}}) {
    if (!path->empty()) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", flag, *path);
  }
  return out;
}

// Checks the arguments and sets the environment CMD runs in (the preload, the trace directory and
// job); an exit status when it cannot run, else nullopt.
std::optional<int> prepare(RunArgs& args, bool& dir_existed) {
  if (args.command.empty()) {
    say("run: no command given (ncclwatch run [options] -- CMD ARGS...)");
    return ncclwatch::tools::kExitUsage;
  }
  if (!args.mode.empty() && args.mode != "full" && args.mode != "lite" && args.mode != "host") {
    say("run: --mode must be full, lite or host");
    return ncclwatch::tools::kExitUsage;
  }
  std::string tried;
  std::string lib = ncclwatch::tools::find_shim_library(tried);
  if (lib.empty()) {
    say("run: cannot find libncclwatch.so (looked at {}); set {}", tried, name(Id::kLib));
    return ncclwatch::tools::kExitError;
  }
  if (args.job.empty()) {
    const char* env = setting(Id::kJob);
    args.job = env != nullptr ? env : default_job();
  }
  args.job = ncclwatch::format::sanitize_name(args.job);  // the shim's rule
  if (args.dir.empty()) {
    const char* env = setting(Id::kDir);
    args.dir = env != nullptr ? env : "ncclwatch-" + args.job;
  }
  std::error_code ec;
  dir_existed = fs::exists(args.dir, ec);
  // A directory the shims could not write to would record nothing: said now, before the job.
  if (fs::create_directories(args.dir, ec); ec) {
    say("run: cannot create the trace directory {}: {}", args.dir, ec.message());
    return ncclwatch::tools::kExitError;
  }
  args.dir = fs::absolute(args.dir, ec).lexically_normal().string();

  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0')
    preload += ":" + std::string(old);
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv(name(Id::kDir), args.dir.c_str(), 1);
  setenv(name(Id::kJob), args.job.c_str(), 1);
  if (!args.mode.empty()) setenv(name(Id::kMode), args.mode.c_str(), 1);
  setenv(name(Id::kExitLine), "off", 1);  // the traces' place is said here, after the job
  // A short interactive run: full detail for the whole run, as the report always had it
  // (docs/always-on.md), unless the job's environment chose.
  setenv(name(Id::kDetail), "all", 0);
  return std::nullopt;
}

// run's hang watchdog (NCCLWATCH_HANG_S, docs/always-on.md "Where a stuck rank is"): while CMD
// runs, a thread reads the job's live status every second; once a rank of this node has held a
// call up that long (live/stack_watch.h), its Python stack is taken with py-spy, saved next to
// the traces (the report's hang verdict names where it is) and said in one line -- once per hang.
// Without py-spy, one line saying how to get it. Off when NCCLWATCH_HANG_S is 0 or unset.
class StackWatchdog {
 public:
  explicit StackWatchdog(const RunArgs& args) {
    const char* v = setting(Id::kHangS);
    const long hang_s = v != nullptr ? std::strtol(v, nullptr, 10) : 0;
    if (hang_s <= 0 || hang_s > 1'000'000) return;
    thread_ =
        std::thread([this, job = args.job, dir = args.dir, hang_s] { watch(job, dir, hang_s); });
  }
  ~StackWatchdog() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  StackWatchdog(const StackWatchdog&) = delete;
  StackWatchdog& operator=(const StackWatchdog&) = delete;

 private:
  void watch(const std::string& job, const std::string& dir, long hang_s) {
    ncclwatch::live::StatusReader reader({job, dir});
    ncclwatch::live::StackWatch stacks{std::chrono::seconds(hang_s)};
    bool hinted = false;
    while (!done_.load()) {
      for (int i = 0; i < 10 && !done_.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (done_.load()) return;
      const auto st = reader.read();
      const auto due = stacks.due(st, st.now_ns);
      if (due.empty()) continue;
      ncclwatch::live::TakeOptions options;
      options.py_spy = ncclwatch::live::find_py_spy();
      options.dir = dir;
      options.job = job;
      if (options.py_spy.empty()) {
        if (!hinted) say("hang: {}", ncclwatch::live::py_spy_hint());
        hinted = true;
        continue;
      }
      for (const auto& t : due)
        say("hang: {}", ncclwatch::live::render_taken(ncclwatch::live::take_stack(t, options)));
    }
  }
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Runs CMD with SIGINT/SIGTERM forwarded; its wait status.
int run_child(RunArgs& args) {
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  std::vector<char*> argv;
  for (auto& a : args.command) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    say("run: fork: {}", std::strerror(errno));
    return 1 << 8;  // exit status 1
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    execvp(argv[0], argv.data());
    say("run: cannot run {}: {}", argv[0], std::strerror(errno));
    _exit(127);
  }
  g_child = child;
  int status = 0;
  {
    StackWatchdog watchdog(args);  // stopped (joined) once CMD is gone
    while (waitpid(child, &status, 0) < 0) {
      if (errno != EINTR) {
        status = 1 << 8;
        break;
      }
    }
  }
  g_child = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return status;
}

// Nothing was recorded (`why`): said in one line, the directory we made removed, and the outputs
// asked for named as not written. The exit status: CMD's when it failed, else 1 when an output
// was asked for, else 0.
int nothing_recorded(const RunArgs& args, bool dir_existed, int rc, const std::string& why) {
  say("{}: nothing to report", why);
  std::error_code ec;
  if (!dir_existed) fs::remove(args.dir, ec);  // only if we made it and it stayed empty
  const std::string outputs = requested_outputs(args);
  if (!outputs.empty()) say("not written: {}", outputs);
  if (rc != 0) return rc;
  return outputs.empty() ? ncclwatch::tools::kExitOk : ncclwatch::tools::kExitError;
}

// README, "Exit codes", for `run`: CMD's non-zero status first; else 1 when the report or a
// requested output could not be produced (report_job said which, in one line); else 3 with
// --strict and a warning; else 0.
int run_status(int rc, ncclwatch::pipeline::ReportStatus report, bool strict) {
  using ncclwatch::pipeline::ReportStatus;
  if (rc != 0) return rc;
  if (report == ReportStatus::kError || report == ReportStatus::kUsage)
    return ncclwatch::tools::kExitError;
  if (strict && report == ReportStatus::kFindings) return ncclwatch::tools::kExitFindings;
  return ncclwatch::tools::kExitOk;
}

// A job of several nodes: this node's ranks reduced to its node file where their traces are
// (docs/multi-node.md), so that the report made on one machine once every node has finished
// reads node files instead of every trace. A job on one node is left alone, and so is a node
// whose ranks are not all done (one `ncclwatch run` per rank: the last one to end reduces). A
// failure is said in one line and the run goes on: the traces are still there.
void reduce_this_node(const RunArgs& args) {
  const std::string host = ncclwatch::reduce::this_host();
  ncclwatch::trace::JobLoadOptions load;
  load.job = args.job;
  ncclwatch::trace::JobIndex index = ncclwatch::trace::index_job(args.dir, load);
  const ncclwatch::reduce::HostInJob here = ncclwatch::reduce::host_in_job(index, host);
  if (!here.spans_hosts) return;
  if (here.running > 0) {
    say("{}: {} of its {} rank(s) still running: not reduced (the last `ncclwatch run` on this "
        "node, or `ncclwatch reduce {}`, does it)",
        host, here.running, here.ranks, args.dir);
    return;
  }
  ncclwatch::reduce::ReduceOptions options;
  options.job = args.job;
  options.host = host;
  const ncclwatch::reduce::ReduceResult result =
      ncclwatch::reduce::reduce_index(args.dir, std::move(index), options);
  if (!result.error.empty()) {
    say("this node's ranks not reduced: {}", result.error);
    return;
  }
  for (const ncclwatch::reduce::ReducedNode& node : result.nodes) {
    if (node.path.empty()) continue;
    say("{}: {} rank(s) reduced to {} ({:.2f} % of their traces) for the job's report", node.host,
        node.ranks, node.path, node.percent_of_traces());
  }
}

int run(RunArgs& args) {
  bool dir_existed = false;
  if (const auto refused = prepare(args, dir_existed)) return *refused;
  const auto started = std::chrono::system_clock::now();
  const int status = run_child(args);
  const int rc = exit_status(status);
  // The preload is for CMD only: nothing we start from here on should record itself.
  unsetenv("LD_PRELOAD");

  // Ranks that died (or hung and were killed) left their last records in shared memory.
  ncclwatch::trace::SalvageOptions salvage;
  salvage.dir = args.dir;
  for (const auto& r : ncclwatch::trace::salvage_job(args.job, salvage))
    say("{}", ncclwatch::trace::describe(r));
  describe_exit(args.command[0], status, rc);
  // NCCL's WARN lines went to the debug logs the shim pointed NCCL_DEBUG_FILE at: said here.
  for (const std::string& line : ncclwatch::topology::captured_warning_lines(args.dir, started))
    say("{}", line);
  const char* enabled = setting(Id::kEnabled);
  if (enabled != nullptr && ncclwatch::settings::switch_is_off(enabled) &&
      ncclwatch::pipeline::no_rank_traces(args.dir)) {
    return nothing_recorded(
        args, dir_existed, rc,
        fmt::format("ncclwatch was turned off ({}={})", name(Id::kEnabled), enabled));
  }
  if (ncclwatch::pipeline::no_rank_traces(args.dir)) {
    return nothing_recorded(args, dir_existed, rc,
                            "the job made no NCCL call (CPU-only, or the gloo backend?)");
  }
  if (args.reduce) reduce_this_node(args);
  say("traces in {}", args.dir);
  ncclwatch::pipeline::ReportRequest req;
  req.dir = args.dir;
  req.job = args.job;
  req.json_path = args.json;
  req.progress = args.progress;
  req.trace_path = args.trace;
  req.html_path = args.html;
  req.steps = args.steps;
  return run_status(rc, ncclwatch::pipeline::report_job(req, stdout, stderr), args.strict);
}

ncclwatch::tools::Command run_command{
    "run", [](CLI::App& app, int& exit_code) {
      auto args = std::make_shared<RunArgs>();
      CLI::App* sub = app.add_subcommand(
          "run", "Run a command with every rank recorded, then print the report");
      sub->add_option("--dir", args->dir,
                      "Trace directory (default $NCCLWATCH_DIR or ./ncclwatch-<job>)");
      sub->add_option("--mode", args->mode,
                      "GPU timing: full (CUPTI), lite (CUDA events) or host (none)");
      sub->add_option("--job", args->job, "Job id (default $NCCLWATCH_JOB or run-<time>-<pid>)");
      sub->add_option("--json", args->json, "Also write the report as JSON to FILE");
      sub->add_flag("--strict", args->strict,
                    "Exit 3 when CMD succeeded but the report has a warning (for CI jobs)");
      sub->add_flag("!--no-progress", args->progress, "No progress lines on stderr");
      sub->add_flag("!--no-reduce", args->reduce,
                    "When the job spans nodes, do not reduce this node's ranks to a node file "
                    "(default: reduced, as `ncclwatch reduce` does)");
      sub->add_option("--html", args->html,
                      "Also write a self-contained HTML report with plots (opens offline)");
      CLI::Option* trace =
          sub->add_option("--trace", args->trace,
                          "Also write the merged timeline as Chrome-trace JSON (Perfetto, HTA)");
      sub->add_option("--steps", args->steps, "With --trace: only steps A:B (1-based)")
          ->check(ncclwatch::tools::steps_validator())
          ->needs(trace);
      sub->add_option("command", args->command, "CMD ARGS... (after --)")->required();
      sub->footer(environment_help());
      sub->callback([args, &exit_code] { exit_code = run(*args); });
    }};

}  // namespace

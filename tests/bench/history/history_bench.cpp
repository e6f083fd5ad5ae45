// `ncclwatch report` of a long run (issue 22): a synthetic job of --ranks ranks x --steps steps of
// step summaries (layout version 5, tests/collector/history/history_sim.h; one rank slow over a
// fifth of the run, the network slower over its last tenth) with --windows capture windows of
// --window-steps steps of full detail, written with format.h; then, in a fresh child process (its
// peak RSS its own), the whole report as the CLI makes it (report_job: load, history, each
// window's analysis, text and JSON). Prints the wall and CPU time, the peak RSS and the history's
// findings. Arguments: --ranks 8 --steps 1000000 --windows 10 --window-steps 20 [--dir D] [--keep]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "history_sim.h"
#include "pipeline/report_job.h"
#include "trace_fixture.h"

namespace {

namespace fs = std::filesystem;
namespace tt = ncclwatch::trace::testing;
namespace hs = ncclwatch::history::testing;
using ncclwatch::format::Record;
using Clock = std::chrono::steady_clock;

struct Args {
  int ranks = 8;
  uint64_t steps = 1'000'000;
  int windows = 10;
  int window_steps = 20;
  std::string dir;
  bool keep = false;
};

long vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

hs::SimJob sim_job(const Args& a) {
  hs::SimJob job;
  job.ranks = a.ranks;
  job.hosts = std::max(1, a.ranks / 4);
  job.steps = a.steps;
  job.ntp_error_ms = 1;
  job.slowdowns.push_back({a.ranks / 2, a.steps * 2 / 5, a.steps * 3 / 5, 5.0, 0, 0});
  job.slowdowns.push_back({-1, a.steps * 9 / 10, a.steps, 0, 0, 3.0});
  return job;
}

// Rank r's trace: identity, clock anchor, the world comm, a summary per step, and full detail
// (an all-reduce with its compute and NCCL kernels) for the steps inside a window.
uint64_t write_rank(const Args& a, const hs::SimJob& job, int r) {
  const auto wall = hs::sim_ranks(job)[static_cast<std::size_t>(r)].wall_offset_ns;
  std::vector<Record> rs;
  rs.reserve(job.steps + 1024);
  rs.push_back(tt::make_identity(r, a.ranks, r % 4, r % 4));
  const int64_t t0 = hs::sim_step(job, r, 0).start_ns;
  rs.push_back(tt::make_clock(t0, t0 + wall, 100));
  rs.push_back(tt::make_comm(0x42, a.ranks, r, t0 - 1000));
  const uint64_t every = job.steps / static_cast<uint64_t>(a.windows + 1);
  for (uint64_t s = 0; s < job.steps; ++s) {
    const auto st = hs::sim_step(job, r, s);
    const uint64_t k = s / every;  // window k-1 covers [k x every, + window_steps)
    const bool in_window = k >= 1 && k <= static_cast<uint64_t>(a.windows) &&
                           s - k * every < static_cast<uint64_t>(a.window_steps);
    if (in_window && s == k * every) {
      rs.push_back(tt::make_window(ncclwatch::format::WindowEvent::kOpen, k,
                                   static_cast<ncclwatch::format::WindowTrigger>(1 + k % 3),
                                   st.start_ns, 0, s, s + a.window_steps));
    }
    if (in_window) {
      const int64_t compute_end = st.start_ns + int64_t{st.compute_us} * 1000;
      rs.push_back(
          tt::make_kernel(st.start_ns, compute_end, static_cast<uint32_t>(2 * s), 0, false));
      rs.push_back(tt::make_call(ncclwatch::format::Func::kAllReduce, 0x42,
                                 static_cast<uint32_t>(s), st.arrive_ns, st.arrive_ns + 20'000,
                                 1 << 20));
      rs.push_back(tt::make_kernel(st.arrive_ns + 10'000, st.sync_ns,
                                   static_cast<uint32_t>(2 * s + 1), 0, true));
    }
    Record rec{};
    rec.step = st;
    rs.push_back(rec);
    if (in_window && s + 1 - k * every == static_cast<uint64_t>(a.window_steps)) {
      const auto next = hs::sim_step(job, r, s + 1);
      rs.push_back(tt::make_window(ncclwatch::format::WindowEvent::kClose, k,
                                   static_cast<ncclwatch::format::WindowTrigger>(1 + k % 3),
                                   hs::sim_step(job, r, k * every).start_ns, next.start_ns,
                                   k * every, s + 1));
    }
  }
  tt::write_rank(a.dir, "bench", "host" + std::to_string(r % job.hosts), 1000 + r, r, a.ranks, rs);
  return rs.size() * sizeof(Record);
}

int measure(const Args& a) {
  const auto w0 = Clock::now();
  const double c0 = cpu_seconds();
  ncclwatch::pipeline::ReportRequest req;
  req.dir = a.dir;
  req.json_path = a.dir + ".report.json";  // beside the traces, not among them
  req.progress = false;
  req.unicode = false;
  const std::string text_path = a.dir + ".report.txt";
  std::FILE* out = std::fopen(text_path.c_str(), "w");
  const auto rc = ncclwatch::pipeline::report_job(req, out, stderr);
  std::fclose(out);
  const double wall = std::chrono::duration<double>(Clock::now() - w0).count();
  std::printf("report: %.2f s wall, %.2f CPU-s, peak RSS (VmHWM) %.1f MiB, exit status %d\n", wall,
              cpu_seconds() - c0, static_cast<double>(vm_hwm_kib()) / 1024.0, static_cast<int>(rc));
  std::ifstream in(text_path);
  std::string line;
  int shown = 0;
  while (std::getline(in, line) && shown < 12) {
    if (line.find("[history]") != std::string::npos || line.rfind("======== ", 0) == 0) {
      std::printf("  %s\n", line.c_str());
      ++shown;
    }
  }
  return rc == ncclwatch::pipeline::ReportStatus::kError ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (k == "--ranks")
      a.ranks = std::atoi(v), ++i;
    else if (k == "--steps")
      a.steps = std::strtoull(v, nullptr, 10), ++i;
    else if (k == "--windows")
      a.windows = std::atoi(v), ++i;
    else if (k == "--window-steps")
      a.window_steps = std::atoi(v), ++i;
    else if (k == "--dir")
      a.dir = v, ++i;
    else if (k == "--keep")
      a.keep = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (a.ranks < 2 || a.windows < 1 ||
      a.steps < static_cast<uint64_t>(4 * (a.windows + 1) * a.window_steps)) {
    std::fprintf(stderr, "need --ranks >= 2, --windows >= 1 and enough steps for the windows\n");
    return 2;
  }
  if (a.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr ? tmp : "/tmp") + "/ncclwatch-history-bench-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    a.dir = pattern;
  }
  const hs::SimJob job = sim_job(a);
  const auto w0 = Clock::now();
  uint64_t bytes = 0;
  for (int r = 0; r < a.ranks; ++r) bytes += write_rank(a, job, r);
  std::printf(
      "%d ranks x %llu steps, %d windows of %d steps: %.0f MiB of trace written in %.1f s\n",
      a.ranks, static_cast<unsigned long long>(a.steps), a.windows, a.window_steps,
      static_cast<double>(bytes) / (1 << 20),
      std::chrono::duration<double>(Clock::now() - w0).count());
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    const int rc = measure(a);
    std::fflush(stdout);
    _exit(rc);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!a.keep) {
    fs::remove_all(a.dir);
    fs::remove(a.dir + ".report.json");
    fs::remove(a.dir + ".report.txt");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

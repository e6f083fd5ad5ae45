// Collector benchmark: writes a synthetic job (64 ranks, 64 M records by default, format.h
// layouts), then, in a fresh child process so that its peak RSS is its own, loads (merges) every
// rank with 2 threads, links GPU work, matches and aligns clocks; prints records/s and VmHWM
// against the trace size. Targets (issue 4): >= 10 M records/s merged and matched, peak RSS <=
// 1.5 x trace size.
//
//   ncclwatch_collector_bench [--records N] [--ranks R] [--threads T] [--mix full|host]
//                             [--analyses] [--dir DIR] [--keep]
//
// --records is the total over all ranks (a smaller value runs a reduced size); --analyses also
// times the analyses (the whole report). Files go to a fresh directory under DIR (default
// $TMPDIR or /tmp) and are deleted afterwards unless --keep. The load reads from the page cache
// (the files were just written): a cold-cache load adds the disk's read time.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "pipeline/pipeline.h"
#include "synthetic_trace_writer.h"
#include "trace/job_loader.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Args {
  uint64_t records = 64ull << 20;
  int ranks = 64;
  unsigned threads = 2;
  std::string mix = "full";
  std::string dir;
  bool keep = false;
  bool analyses = false;
};

long vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU seconds of this process so far (all threads): on a loaded machine wall time says little,
// CPU time says what the work costs.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double load_average() {
  double avg[1] = {0};
  return getloadavg(avg, 1) == 1 ? avg[0] : -1;
}

// The measured part, in a child: its VmHWM starts from nothing.
int measure(const Args& args, const std::string& dir, uint64_t trace_bytes) {
  struct Mark {
    Clock::time_point wall;
    double cpu;
  };
  auto mark = [] { return Mark{Clock::now(), cpu_seconds()}; };
  const Mark m0 = mark();
  ncclwatch::trace::JobLoadOptions load;
  load.threads = args.threads;
  ncclwatch::model::JobTrace job = ncclwatch::trace::load_job(dir, load);
  const Mark m1 = mark();
  uint64_t records = 0, calls = 0;
  for (const auto& r : job.ranks) {
    records += r.info.records;
    calls += r.calls.size();
  }
  std::map<std::string, Mark> stages;
  ncclwatch::pipeline::PipelineOptions options;
  options.analyses = args.analyses;
  options.progress = [&stages, &mark](const char* s) { stages[s] = mark(); };
  auto result = ncclwatch::pipeline::run_pipeline(job, options);
  const Mark m2 = mark();
  auto at = [&](const char* s, const Mark& fallback) {
    auto it = stages.find(s);
    return it == stages.end() ? fallback : it->second;
  };
  const Mark mm = at("matching", m1), mc = at("aligning clocks", m2), ma = at("analysing", m2);
  const double load_s = seconds(m0.wall, m1.wall), link_s = seconds(m1.wall, mm.wall);
  const double match_s = seconds(mm.wall, mc.wall), clock_s = seconds(mc.wall, ma.wall);
  const double rest_s = seconds(ma.wall, m2.wall);
  const long hwm = vm_hwm_kib();
  const double rate = static_cast<double>(records) / (load_s + link_s + match_s);
  const double ratio = static_cast<double>(hwm) * 1024.0 / static_cast<double>(trace_bytes);
  std::printf("ranks %zu, records %llu (calls %llu), trace %.2f GiB, %u threads, mix %s\n",
              job.ranks.size(), static_cast<unsigned long long>(records),
              static_cast<unsigned long long>(calls), static_cast<double>(trace_bytes) / (1 << 30),
              args.threads, args.mix.c_str());
  std::printf("wall seconds: load (merge) %.2f, GPU link %.2f, match %.2f, clocks %.3f, %s %.2f\n",
              load_s, link_s, match_s, clock_s, args.analyses ? "analyses+report" : "report",
              rest_s);
  std::printf(
      "CPU seconds:  load (merge) %.2f, GPU link %.2f, match %.2f, clocks %.3f, rest %.2f "
      "(load average %.1f on %ld cores)\n",
      m1.cpu - m0.cpu, mm.cpu - m1.cpu, mc.cpu - mm.cpu, ma.cpu - mc.cpu, m2.cpu - ma.cpu,
      load_average(), sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("instances %zu, incomplete runs %zu, desyncs %zu, input problems %zu\n",
              result.match.instances.size(), result.match.incomplete.size(),
              result.match.desyncs.size(), job.problems.size());
  std::printf(
      "merged+linked+matched: %.1f M records/s wall (target >= 10); match alone %.1f M calls/s\n",
      rate / 1e6, static_cast<double>(calls) / match_s / 1e6);
  const double cpu_core = m1.cpu - m0.cpu + mc.cpu - m1.cpu;
  std::printf(
      "merged+linked+matched: %.1f M records per CPU-second (what one idle core does; on 2 idle "
      "cores the wall rate lies between this and twice it: load and GPU link run on 2 threads)\n",
      static_cast<double>(records) / cpu_core / 1e6);
  std::printf("whole pipeline: %.1f M records/s wall\n",
              static_cast<double>(records) / seconds(m0.wall, m2.wall) / 1e6);
  std::printf("peak RSS (VmHWM) %.2f GiB = %.2f x trace size (target <= 1.5)\n",
              static_cast<double>(hwm) / (1 << 20), ratio);
  return records > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--records")
      args.records = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--ranks")
      args.ranks = std::atoi(value().c_str());
    else if (a == "--threads")
      args.threads = static_cast<unsigned>(std::atoi(value().c_str()));
    else if (a == "--mix")
      args.mix = value();
    else if (a == "--dir")
      args.dir = value();
    else if (a == "--keep")
      args.keep = true;
    else if (a == "--analyses")
      args.analyses = true;
    else {
      std::fprintf(
          stderr,
          "usage: %s [--records N] [--ranks R] [--threads T] [--mix full|host] [--analyses] "
          "[--dir DIR] [--keep]\n",
          argv[0]);
      return 2;
    }
  }
  if (args.ranks < 1 || args.records < static_cast<uint64_t>(args.ranks) * 16 ||
      (args.mix != "full" && args.mix != "host")) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  if (args.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    args.dir = tmp != nullptr ? tmp : "/tmp";
  }
  std::string templ = args.dir + "/ncclwatch-collector-bench.XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = templ;

  ncclwatch::bench::SyntheticJob spec;
  spec.dir = dir;
  spec.ranks = args.ranks;
  spec.ranks_per_host = std::min(8, args.ranks);
  spec.records_per_rank = args.records / static_cast<uint64_t>(args.ranks);
  spec.mix = args.mix;
  auto w0 = Clock::now();
  uint64_t bytes = 0;
  try {
    bytes = ncclwatch::bench::write_synthetic_job(spec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    fs::remove_all(dir);
    return 1;
  }
  std::printf("wrote %.2f GiB in %.1f s to %s\n", static_cast<double>(bytes) / (1 << 30),
              seconds(w0, Clock::now()), dir.c_str());
  std::fflush(stdout);

  pid_t child = fork();
  if (child == 0) {
    int rc = measure(args, dir, bytes);
    std::fflush(stdout);
    _exit(rc);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!args.keep) fs::remove_all(dir);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

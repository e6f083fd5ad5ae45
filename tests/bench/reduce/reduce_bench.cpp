// Reduce benchmark (issue 24): `ncclwatch reduce DIR --all-hosts` then `ncclwatch report DIR`
// (node files) against `ncclwatch report DIR` of the traces, on a realistic full-mode DDP job
// (training_rank_writer.h: compute kernels with their launches, gradient all-reduces, ranges,
// step summaries; a straggler and a periodic stall). Each command is the CLI in a child process:
// wall and CPU time and peak RSS (wait4). Prints records per CPU-second of the reduce, node-file
// bytes against the traces, and whether the two reports are the same but for the node-file note.
//
//   ncclwatch_reduce_bench --ncclwatch PATH [--ranks R] [--steps S] [--kernels K]
//                          [--ranks-per-host H] [--kernel-gap-ns G] [--node-by-node]
//                          [--compute-resolution-ns N] [--dir DIR] [--keep]
//
// --compute-resolution-ns N passes the same option to `reduce` (compute times on an N ns grid,
// lossy): the two reports are then compared by their verdicts (tests/support/report_verdicts.h),
// and the note must say the times were rounded.
//
// --node-by-node is the multi-node flow on one disk that cannot hold the whole job: each host's
// traces are written, reduced (`reduce DIR --host NAME`) and deleted before the next host's, and
// only the node files are reported (the traces' report, and the comparison, are left out).
//
// The traces are synced before the commands run and read from the page cache, as the scale
// benchmark's are (tests/bench/scale/README.md).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node_note.h"
#include "report_verdicts.h"
#include "training_rank_writer.h"
#include "training_timeline.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Run {
  bool ok = false;
  double wall_s = 0, cpu_s = 0, peak_rss = 0;
};

// `args` in a child, its output to `out`; its times and peak RSS.
Run run(const std::vector<std::string>& args, const std::string& out) {
  Run r;
  const auto t0 = Clock::now();
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null_fd = open("/dev/null", O_WRONLY);
    if (fd < 0 || null_fd < 0 || dup2(fd, 1) < 0 || dup2(null_fd, 2) < 0) _exit(126);
    setenv("COLUMNS", "100000", 1);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (child < 0) return r;
  int status = 0;
  rusage ru{};
  wait4(child, &status, 0, &ru);
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  r.peak_rss = static_cast<double>(ru.ru_maxrss) * 1024.0;
  // report: 0 clean, 3 warnings (the injected straggler is one); reduce: 0.
  r.ok = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3);
  return r;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t bytes_with(const std::string& dir, const std::string& extension) {
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == extension) total += e.file_size();
  return total;
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --ncclwatch PATH [--ranks R] [--steps S] [--kernels K] "
               "[--ranks-per-host H] [--kernel-gap-ns G] [--node-by-node] "
               "[--compute-resolution-ns N] [--dir DIR] [--keep]\n",
               argv0);
  return 2;
}

void sync_dir(const std::string& dir) {
  if (const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY); fd >= 0) {
    syncfs(fd);
    close(fd);
  }
}

// --node-by-node: write, reduce and delete one host's traces at a time, then report the node
// files alone. The exit status.
int node_by_node(const std::string& exe, const ncclwatch::bench::TrainingJob& job,
                 const std::string& templ, const std::vector<std::string>& reduce_args) {
  const ncclwatch::bench::TrainingTimeline timeline(job);
  ncclwatch::bench::TrainingJobFiles all;
  Run reduce;
  reduce.ok = true;
  const int hosts = (job.ranks + job.ranks_per_host - 1) / job.ranks_per_host;
  for (int h = 0; h < hosts; ++h) {
    for (int r = h * job.ranks_per_host; r < std::min(job.ranks, (h + 1) * job.ranks_per_host);
         ++r) {
      const auto one = ncclwatch::bench::TrainingRankWriter(timeline, r).write();
      all.bytes += one.bytes;
      all.records += one.records;
    }
    sync_dir(job.dir);
    char host[16];
    std::snprintf(host, sizeof host, "node%03d", h);
    std::vector<std::string> args = {exe, "reduce", job.dir, "--host", host};
    args.insert(args.end(), reduce_args.begin(), reduce_args.end());
    const Run one = run(args, templ + "/reduce.txt");
    reduce.ok = reduce.ok && one.ok;
    reduce.wall_s += one.wall_s;
    reduce.cpu_s += one.cpu_s;
    reduce.peak_rss = std::max(reduce.peak_rss, one.peak_rss);
    for (const auto& e : fs::directory_iterator(job.dir))
      if (e.path().extension() == ".trace") fs::remove(e.path());
  }
  sync_dir(job.dir);
  const uint64_t node_bytes = bytes_with(job.dir, ".node");
  const Run merged =
      run({exe, "report", job.dir, "--json", templ + "/nodes.json"}, templ + "/nodes.txt");
  const std::string text = text_of(templ + "/nodes.txt");
  const bool noted = text.find(ncclwatch::test_support::kNodeFileNote) != std::string::npos;
  const double records = static_cast<double>(all.records);
  std::printf(
      "%d ranks x %d steps x %d kernels, %lld ns apart (%d per host), node by node: %.1f M "
      "records, traces %.3f GiB (one host's on disk at a time)\n"
      "  reduce, each host    : %6.2f s wall, %6.2f CPU-s in all, peak RSS %.3f GiB, %.1f M "
      "records per CPU-s%s\n"
      "  node files           : %.4f GiB = %.2f %% of the traces\n"
      "  report of node files : %6.2f s wall, %6.2f CPU-s, peak RSS %.3f GiB%s; note %s\n",
      job.ranks, job.steps, job.kernels_per_step, static_cast<long long>(job.kernel_gap_ns),
      job.ranks_per_host, records / 1e6, static_cast<double>(all.bytes) / kGiB, reduce.wall_s,
      reduce.cpu_s, reduce.peak_rss / kGiB, records / reduce.cpu_s / 1e6,
      reduce.ok ? "" : " FAILED", static_cast<double>(node_bytes) / kGiB,
      100.0 * static_cast<double>(node_bytes) / static_cast<double>(all.bytes), merged.wall_s,
      merged.cpu_s, merged.peak_rss / kGiB, merged.ok ? "" : " FAILED",
      noted ? "present" : "MISSING");
  return reduce.ok && merged.ok && noted ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string exe, base = fs::temp_directory_path().string();
  ncclwatch::bench::TrainingJob job;
  job.ranks = 64;
  job.steps = 200;
  job.ranks_per_host = 8;
  bool keep = false, by_node = false;
  std::vector<std::string> reduce_args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--ncclwatch" && has_value) {
      exe = argv[++i];
    } else if (a == "--ranks" && has_value) {
      job.ranks = std::atoi(argv[++i]);
    } else if (a == "--steps" && has_value) {
      job.steps = std::atoi(argv[++i]);
    } else if (a == "--kernels" && has_value) {
      job.kernels_per_step = std::atoi(argv[++i]);
    } else if (a == "--kernel-gap-ns" && has_value) {
      job.kernel_gap_ns = std::atoll(argv[++i]);
    } else if (a == "--ranks-per-host" && has_value) {
      job.ranks_per_host = std::atoi(argv[++i]);
    } else if (a == "--dir" && has_value) {
      base = argv[++i];
    } else if (a == "--compute-resolution-ns" && has_value) {
      reduce_args = {"--compute-resolution-ns", argv[++i]};
    } else if (a == "--node-by-node") {
      by_node = true;
    } else if (a == "--keep") {
      keep = true;
    } else {
      return usage(argv[0]);
    }
  }
  if (exe.empty() || job.ranks < 2 || job.steps < 1) return usage(argv[0]);
  job.ranks_per_host = std::min(job.ranks_per_host, job.ranks);
  job.straggler_rank = job.ranks * 5 / 8;
  job.stall_rank = job.ranks > 2 ? job.ranks / 4 : -1;
  std::string templ = base + "/ncclwatch-reduce-bench.XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  job.dir = templ + "/traces";
  fs::create_directory(job.dir);
  int rc = 0;
  try {
    if (by_node) {
      rc = node_by_node(exe, job, templ, reduce_args);
      if (!keep) fs::remove_all(templ);
      return rc;
    }
    const auto files = write_training_job(ncclwatch::bench::TrainingTimeline(job));
    sync_dir(job.dir);
    const Run traces =
        run({exe, "report", job.dir, "--json", templ + "/traces.json"}, templ + "/traces.txt");
    std::vector<std::string> args = {exe, "reduce", job.dir, "--all-hosts"};
    args.insert(args.end(), reduce_args.begin(), reduce_args.end());
    const Run reduce = run(args, templ + "/reduce.txt");
    const uint64_t node_bytes = bytes_with(job.dir, ".node");
    const Run merged =
        run({exe, "report", job.dir, "--json", templ + "/nodes.json"}, templ + "/nodes.txt");
    namespace ts = ncclwatch::test_support;
    const nlohmann::json traces_json = ts::without_node_note(
        nlohmann::json::parse(text_of(templ + "/traces.json"), nullptr, false));
    const nlohmann::json nodes_json = ts::without_node_note(
        nlohmann::json::parse(text_of(templ + "/nodes.json"), nullptr, false));
    const bool exact = reduce_args.empty();
    const bool same_text = ts::without_node_note(text_of(templ + "/traces.txt")) ==
                           ts::without_node_note(text_of(templ + "/nodes.txt"));
    const bool same_json = traces_json == nodes_json;
    const bool same_verdicts = ts::verdicts_of(traces_json) == ts::verdicts_of(nodes_json);
    const std::string nodes_text = text_of(templ + "/nodes.txt");
    const bool noted = nodes_text.find(ts::kNodeFileNote) != std::string::npos &&
                       (exact || nodes_text.find("compute times rounded") != std::string::npos);
    const double records = static_cast<double>(files.records);
    std::printf(
        "%d ranks x %d steps x %d kernels, %lld ns apart (%d per host): %.1f M records, traces "
        "%.3f GiB\n"
        "  report of the traces : %6.2f s wall, %6.2f CPU-s, peak RSS %.3f GiB%s\n"
        "  reduce --all-hosts   : %6.2f s wall, %6.2f CPU-s, peak RSS %.3f GiB, %.1f M records "
        "per CPU-s%s\n"
        "  node files           : %.4f GiB = %.2f %% of the traces\n"
        "  report of node files : %6.2f s wall, %6.2f CPU-s, peak RSS %.3f GiB%s (%.1f x less "
        "CPU than the traces' report)\n"
        "  the same report but for the note: text %s, JSON %s; the same verdicts: %s; note %s\n",
        job.ranks, job.steps, job.kernels_per_step, static_cast<long long>(job.kernel_gap_ns),
        job.ranks_per_host, records / 1e6, static_cast<double>(files.bytes) / kGiB, traces.wall_s,
        traces.cpu_s, traces.peak_rss / kGiB, traces.ok ? "" : " FAILED", reduce.wall_s,
        reduce.cpu_s, reduce.peak_rss / kGiB, records / reduce.cpu_s / 1e6,
        reduce.ok ? "" : " FAILED", static_cast<double>(node_bytes) / kGiB,
        100.0 * static_cast<double>(node_bytes) / static_cast<double>(files.bytes), merged.wall_s,
        merged.cpu_s, merged.peak_rss / kGiB, merged.ok ? "" : " FAILED",
        traces.cpu_s / merged.cpu_s,
        same_text ? "yes"
        : exact   ? "NO"
                  : "no (rounded)",
        same_json ? "yes"
        : exact   ? "NO"
                  : "no (rounded)",
        same_verdicts ? "yes" : "NO", noted ? "present" : "MISSING");
    if (!traces.ok || !reduce.ok || !merged.ok || !same_verdicts || !noted) rc = 1;
    if (exact && (!same_text || !same_json)) rc = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    rc = 1;
  }
  if (!keep) fs::remove_all(templ);
  return rc;
}

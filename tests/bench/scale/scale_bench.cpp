// Scale benchmark (issue 24's measuring stick): how `ncclwatch report` -- the CLI, as a user runs
// it -- grows with a full-mode job's length and width. Writes realistic DDP training jobs
// (training_rank_writer.h: per step forward/backward compute kernels with their launches,
// gradient all-reduces overlapping the backward, ProfilerStep ranges, step summaries; a
// straggler and a periodic stall), runs `ncclwatch report DIR --json` on each in a child process
// and reports its wall and CPU time and peak RSS (wait4) against the trace bytes, over a grid:
// steps at fixed ranks and ranks at fixed steps. Each job is deleted after use; a size the disk
// cannot hold (free space, --max-disk-gb) is skipped and said so.
//
//   ncclwatch_scale_bench --ncclwatch PATH [--ranks R --steps S | --points RxS,RxS,...]
//                         [--kernels K] [--buckets B] [--ranks-per-host H] [--dir DIR]
//                         [--max-disk-gb G] [--keep]
//
// Without --ranks/--steps or --points the grid is 64 ranks x {100, 200, 400, 800} steps and
// {16, 64, 256, 512} ranks x 100 steps (at most 2.6 GiB of trace at a time with the default 400
// kernels and 8 buckets per step). The report reads from the page cache (the files were just
// written, and synced so that no writeback competes with it).
//
// The peak RSS, and the highest RSS while analysing, are then fitted as fixed + per rank + per
// rank-step + per JSON row, and the 4,096 x 1,000 estimate is the higher of the two: the
// breakdown's per_step JSON rows are bounded for the whole job (StepBreakdownReport::
// per_step_limit), so a fit linear in rank-steps overstates big jobs, and their text makes the
// peak of small jobs (writing the report) while big ones peak while analysing. The points must
// tell the rows from the rank-steps (some with the rows at their bound: more rank-steps than
// 65,536); else the rows count as rank-steps and the estimate says that it overstates.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/step_breakdown_report.h"
#include "training_rank_writer.h"
#include "training_timeline.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using ncclwatch::bench::TrainingJob;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

struct Args {
  std::string ncclwatch;
  int ranks = 0, steps = 0;
  int kernels = 400, buckets = 8, ranks_per_host = 8;
  int64_t kernel_gap_ns = 0;
  std::string dir;
  double max_disk_gb = 3.0;
  bool keep = false;
  std::vector<std::pair<int, int>> points;  // --points: (ranks, steps)
};

struct Point {
  int ranks = 0, steps = 0;
  bool ran = false;
  uint64_t bytes = 0, records = 0;
  double write_s = 0, wall_s = 0, cpu_s = 0, sys_s = 0;  // cpu_s: user + system
  double peak_rss = 0;                                   // bytes (ru_maxrss)
  double peak_at = 0;   // share of the wall time when RSS first reached 90 % of its peak
  std::string verdict;  // what the report said (stragglers, matching)
  // The highest RSS sampled in each stage the report showed, in the order it entered them.
  std::vector<std::pair<std::string, double>> stages;
};

Point point(int ranks, int steps) {
  Point p;
  p.ranks = ranks;
  p.steps = steps;
  return p;
}

// Bytes a job of these dimensions takes (training_rank_writer.cpp's records per step: a launch
// and a kernel per compute kernel, four records per bucket, range + name + summary + sched).
double estimate_bytes(const Args& a, int ranks, int steps) {
  const double per_step = 2.0 * a.kernels + 4.0 * a.buckets + 4.0;
  return static_cast<double>(ranks) * (per_step * steps + 32) * 64.0;
}

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return 0;
}

// What the JSON report says about the job, in one line (the analyses did their work).
std::string verdict_of(const std::string& json_path) {
  std::ifstream in(json_path);
  if (!in) return "no JSON report";
  try {
    const auto r = nlohmann::json::parse(in);
    std::string out;
    for (const auto& c : r["comms"])
      out += "matched " + std::to_string(c["instances"].get<uint64_t>()) + " (incomplete " +
             std::to_string(c["incomplete"].get<uint64_t>()) + ", desync " +
             std::to_string(c["desyncs"].get<uint64_t>()) + ")";
    out += "; stragglers:";
    for (const auto& s : r["stragglers"])
      out += " rank " + std::to_string(s["rank"].get<int>()) + " " +
             s["pattern"].get<std::string>() + "/" + s["cause"].get<std::string>();
    out += "; problems " + std::to_string(r["problems"].size());
    return out;
  } catch (const std::exception& e) {
    return std::string("unreadable JSON report: ") + e.what();
  }
}

// The stage a progress line names: "ncclwatch: reading traces: 3/64 files, ... (1.2 s)" ->
// "reading traces"; "" for anything else.
std::string stage_of(const std::string& line) {
  const std::string prefix = "ncclwatch: ";
  if (line.rfind(prefix, 0) != 0) return "";
  std::string text = line.substr(prefix.size());
  const auto cut = std::min(text.find(':'), text.find(" ("));
  return cut == std::string::npos ? text : text.substr(0, cut);
}

// `ncclwatch report DIR --json FILE` in a child, its stderr on a pseudo-terminal so that it
// shows every stage it enters (after its first second: ProgressLine); its peak RSS (wait4) and
// times, and the highest RSS sampled in each stage.
bool run_report(const Args& a, const std::string& dir, Point& p) {
  const std::string json = dir + ".report.json";
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    std::perror("posix_openpt");
    return false;
  }
  const std::string slave = ptsname(master);
  const auto t0 = Clock::now();
  const pid_t child = fork();
  if (child == 0) {
    const int null_fd = open("/dev/null", O_WRONLY);
    const int err_fd = open(slave.c_str(), O_WRONLY | O_NOCTTY);
    if (null_fd < 0 || err_fd < 0 || dup2(null_fd, 1) < 0 || dup2(err_fd, 2) < 0) _exit(126);
    execl(a.ncclwatch.c_str(), a.ncclwatch.c_str(), "report", dir.c_str(), "--json", json.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  if (child < 0) return false;
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
  std::string err_text, line, stage = "(first second)";
  const auto read_err = [&] {
    char buf[4096];
    for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) {
      for (ssize_t i = 0; i < n; ++i) {
        const char c = buf[i];
        err_text.push_back(c);
        if (c == '\r' || c == '\n' || c == '\033') {
          if (const std::string st = stage_of(line); !st.empty()) stage = st;
          line.clear();
        } else {
          line.push_back(c);
        }
      }
    }
  };
  std::vector<std::pair<double, long>> samples;
  int status = 0;
  rusage ru{};
  for (;;) {
    read_err();
    const long rss = rss_kib(child);
    const pid_t done = wait4(child, &status, WNOHANG, &ru);
    if (done == child) break;
    samples.emplace_back(std::chrono::duration<double>(Clock::now() - t0).count(), rss);
    auto it = std::find_if(p.stages.begin(), p.stages.end(),
                           [&](const auto& s) { return s.first == stage; });
    if (it == p.stages.end()) it = p.stages.insert(it, {stage, 0.0});
    it->second = std::max(it->second, static_cast<double>(rss) * 1024.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  read_err();
  close(master);
  p.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  p.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  p.sys_s =
      static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) / 1e6;
  p.peak_rss = static_cast<double>(ru.ru_maxrss) * 1024.0;
  long peak = 0;
  for (const auto& s : samples) peak = std::max(peak, s.second);
  for (const auto& s : samples) {
    if (s.second >= peak * 9 / 10) {
      p.peak_at = s.first / p.wall_s;
      break;
    }
  }
  p.verdict = verdict_of(json);
  // 0: a clean report, 3: a report with warnings (the straggler is one).
  const bool ok = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3);
  if (!ok)
    std::fprintf(stderr, "ncclwatch report failed (status %d): %s\n", status, err_text.c_str());
  if (!a.keep) fs::remove(json);
  return ok;
}

bool run_point(const Args& a, Point& p) {
  const double need = estimate_bytes(a, p.ranks, p.steps);
  struct statvfs vfs {};
  if (statvfs(a.dir.c_str(), &vfs) != 0) {
    std::perror("statvfs");
    return false;
  }
  const double free_bytes = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
  if (need > a.max_disk_gb * kGiB || need + 512 * kMiB > free_bytes) {
    std::printf(
        "%5d ranks x %5d steps: SKIPPED, needs %.2f GiB of trace; %.2f GiB free in %s, "
        "limit %.2f GiB (--max-disk-gb)\n",
        p.ranks, p.steps, need / kGiB, free_bytes / kGiB, a.dir.c_str(), a.max_disk_gb);
    return true;
  }
  std::string templ = a.dir + "/ncclwatch-scale-bench.XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    std::perror("mkdtemp");
    return false;
  }
  TrainingJob job;
  job.dir = templ;
  job.ranks = p.ranks;
  job.ranks_per_host = std::min(a.ranks_per_host, p.ranks);
  job.steps = p.steps;
  job.buckets = a.buckets;
  job.kernels_per_step = a.kernels;
  job.kernel_gap_ns = a.kernel_gap_ns;
  job.straggler_rank = p.ranks > 1 ? p.ranks * 5 / 8 : -1;
  job.stall_rank = p.ranks > 2 ? p.ranks / 4 : -1;
  bool ok = true;
  try {
    const auto w0 = Clock::now();
    const auto files = write_training_job(ncclwatch::bench::TrainingTimeline(job));
    // Onto the disk before the report: a report right after the write competes with the
    // kernel's writeback of GiBs of dirty pages (a 2.5 GiB job took 24 s instead of 5, most of it
    // system time); a user's traces were written long before.
    if (const int fd = open(job.dir.c_str(), O_RDONLY | O_DIRECTORY); fd >= 0) {
      syncfs(fd);
      close(fd);
    }
    p.write_s = std::chrono::duration<double>(Clock::now() - w0).count();
    p.bytes = files.bytes;
    p.records = files.records;
    ok = run_report(a, job.dir, p);
    p.ran = ok;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    ok = false;
  }
  if (!a.keep) fs::remove_all(job.dir);
  if (p.ran) {
    std::printf(
        "%5d ranks x %5d steps: %6.1f M records, trace %6.3f GiB (written and synced in %.1f s); "
        "report %6.1f "
        "s wall, %5.1f CPU-s (%4.1f system), %4.1f M records per CPU-s; peak RSS %6.3f GiB = %.2f "
        "x "
        "the traces (90 %% of it reached at %2.0f %% of the run)\n  %s\n",
        p.ranks, p.steps, static_cast<double>(p.records) / 1e6, static_cast<double>(p.bytes) / kGiB,
        p.write_s, p.wall_s, p.cpu_s, p.sys_s, static_cast<double>(p.records) / p.cpu_s / 1e6,
        p.peak_rss / kGiB, p.peak_rss / static_cast<double>(p.bytes), p.peak_at * 100,
        p.verdict.c_str());
    std::printf("  RSS by stage (GiB):");
    for (const auto& [stage, rss] : p.stages) std::printf(" %s %.3f;", stage.c_str(), rss / kGiB);
    std::printf("\n");
    std::fflush(stdout);
  }
  return ok;
}

// Least-squares line y = a + b x over the points that ran; false with fewer than two.
bool fit(const std::vector<std::pair<double, double>>& xy, double& a, double& b) {
  if (xy.size() < 2) return false;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : xy) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = static_cast<double>(xy.size());
  const double d = n * sxx - sx * sx;
  if (d == 0) return false;
  b = (n * sxy - sx * sy) / d;
  a = (sy - b * sx) / n;
  return true;
}

// Least squares y = sum_k c[k] x[k] (normal equations, Gaussian elimination with partial
// pivoting); false when the points do not determine every coefficient (fewer points than terms,
// or two terms that move together over them).
bool fit_terms(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
               std::vector<double>& c) {
  const std::size_t k = x.empty() ? 0 : x[0].size();
  if (k == 0 || x.size() < k) return false;
  // Each term scaled to its largest value, so the pivots compare like with like.
  std::vector<double> scale(k, 0.0);
  for (const auto& row : x)
    for (std::size_t j = 0; j < k; ++j) scale[j] = std::max(scale[j], std::abs(row[j]));
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (std::size_t p = 0; p < x.size(); ++p) {
    for (std::size_t i = 0; i < k; ++i) {
      const double xi = scale[i] > 0 ? x[p][i] / scale[i] : 0.0;
      for (std::size_t j = 0; j < k; ++j) m[i][j] += xi * (scale[j] > 0 ? x[p][j] / scale[j] : 0.0);
      m[i][k] += xi * y[p];
    }
  }
  for (std::size_t col = 0; col < k; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < k; ++r)
      if (std::abs(m[r][col]) > std::abs(m[pivot][col])) pivot = r;
    if (std::abs(m[pivot][col]) < 1e-9 * static_cast<double>(x.size())) return false;
    std::swap(m[col], m[pivot]);
    for (std::size_t r = 0; r < k; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (std::size_t j = col; j <= k; ++j) m[r][j] -= f * m[col][j];
    }
  }
  c.assign(k, 0.0);
  for (std::size_t j = 0; j < k; ++j) c[j] = m[j][k] / m[j][j] / scale[j];
  return true;
}

// The breakdown's per_step JSON rows of a job: each rank keeps min(steps, per_step_limit(ranks))
// (warm-up steps included in the bound, step_breakdown_report.h).
double json_rows(int ranks, int steps) {
  const std::size_t limit =
      ncclwatch::analysis::StepBreakdownReport::per_step_limit(static_cast<std::size_t>(ranks));
  return static_cast<double>(ranks) *
         static_cast<double>(std::min(static_cast<std::size_t>(steps), limit));
}

// The highest RSS sampled in `stage` ("": the peak, ru_maxrss); 0 when the run did not show it.
double rss_in(const Point& p, const std::string& stage) {
  if (stage.empty()) return p.peak_rss;
  for (const auto& [name, rss] : p.stages)
    if (name == stage) return rss;
  return 0;
}

// RSS = fixed + per rank x ranks + per rank-step x rank-steps + per row x JSON rows, fitted on
// the peak or on one stage's highest sample.
struct PeakModel {
  bool rows_apart = false;  // the rows were told from the rank-steps (else counted as them)
  bool all_capped = false;  // ... they were not, but every point had them at their bound
  double fixed = 0, per_rank = 0, per_rank_step = 0, per_row = 0;

  static bool of(const std::vector<Point>& points, const std::string& stage, PeakModel& m) {
    std::vector<std::vector<double>> x4, x3;
    std::vector<double> y;
    bool capped = false, all_capped = true;
    for (const auto& p : points) {
      if (!p.ran || rss_in(p, stage) <= 0) continue;
      const double rs = static_cast<double>(p.ranks) * p.steps, rows = json_rows(p.ranks, p.steps);
      capped = capped || rows < rs;
      all_capped = all_capped && rows < rs;
      x4.push_back({1.0, static_cast<double>(p.ranks), rs, rows});
      x3.push_back({1.0, static_cast<double>(p.ranks), rs});
      y.push_back(rss_in(p, stage));
    }
    std::vector<double> c;
    if (capped && fit_terms(x4, y, c)) {
      m = {true, false, c[0], c[1], c[2], c[3]};
      return true;
    }
    if (!fit_terms(x3, y, c)) return false;
    m = {false, all_capped, c[0], c[1], c[2], 0.0};
    return true;
  }
  double at(int ranks, int steps) const {
    return fixed + per_rank * ranks + per_rank_step * static_cast<double>(ranks) * steps +
           per_row * json_rows(ranks, steps);
  }
};

void summarize(const std::vector<Point>& points, int fixed_ranks, int fixed_steps) {
  std::vector<std::pair<double, double>> by_steps, by_ranks;
  const Point* largest = nullptr;
  const Point* target = nullptr;  // 4,096 x 1,000, when it was measured
  for (const auto& p : points) {
    if (!p.ran) continue;
    if (p.ranks == fixed_ranks) by_steps.emplace_back(p.steps, p.peak_rss);
    if (p.steps == fixed_steps) by_ranks.emplace_back(p.ranks, p.peak_rss);
    if (largest == nullptr || p.records > largest->records) largest = &p;
    if (p.ranks == 4096 && p.steps == 1000) target = &p;
  }
  double a = 0, b = 0;
  if (fit(by_steps, a, b))
    std::printf("peak RSS at %d ranks: %.0f MiB + %.2f MiB per step (%.1f KiB per rank-step)\n",
                fixed_ranks, a / kMiB, b / kMiB, b / fixed_ranks / 1024);
  if (fit(by_ranks, a, b))
    std::printf("peak RSS at %d steps: %.0f MiB + %.2f MiB per rank (%.1f KiB per rank-step)\n",
                fixed_steps, a / kMiB, b / kMiB, b / fixed_steps / 1024);
  if (largest == nullptr) return;
  // Trace, records and CPU scale with rank-steps: from the largest run. Time in CPU-seconds
  // (wall time on a shared machine says more about the neighbours).
  const double rank_steps = static_cast<double>(largest->ranks) * largest->steps;
  const double scale = 4096.0 * 1000.0 / rank_steps;
  std::printf(
      "per rank-step (%d x %d run): %.1f KiB of trace, %.1f KiB of peak RSS, %.0f us of CPU\n",
      largest->ranks, largest->steps, static_cast<double>(largest->bytes) / rank_steps / 1024,
      largest->peak_rss / rank_steps / 1024, largest->cpu_s / rank_steps * 1e6);
  std::printf(
      "4,096 ranks x 1,000 steps (x%.0f the largest run): trace %.0f GiB, %.2f G records, %.0f "
      "CPU-minutes (at least %.0f min wall on 2 cores, plus reading the traces from disk)\n",
      scale, static_cast<double>(largest->bytes) * scale / kGiB,
      static_cast<double>(largest->records) * scale / 1e9, largest->cpu_s * scale / 60,
      largest->cpu_s * scale / 120);
  // The peak came while writing the report in the small runs (the JSON rows' text), and comes
  // while analysing in big ones (the per-rank-step results): a model of each, the estimate the
  // higher of the two.
  double estimate = 0;
  for (const std::string stage : {"", "analysing"}) {
    const std::string what = stage.empty() ? "peak RSS" : "RSS while " + stage;
    PeakModel m;
    if (!PeakModel::of(points, stage, m)) {
      std::printf(
          "%s model: too few points (3 with different ranks and steps; 4 to tell the rows apart)\n",
          what.c_str());
      continue;
    }
    std::printf(
        "%s model: %.0f MiB + %.1f KiB per rank + %.0f bytes per rank-step + %.0f bytes per "
        "per_step JSON row%s; at 4,096 ranks x 1,000 steps %.2f GiB\n",
        what.c_str(), m.fixed / kMiB, m.per_rank / 1024, m.per_rank_step, m.per_row,
        m.rows_apart   ? ""
        : m.all_capped ? " (every point had its rows at their bound, as 4,096 x 1,000 has: "
                         "they are in the fixed part)"
                       : " (rows not told apart: counted as rank-steps, which overstates big "
                         "jobs)",
        m.at(4096, 1000) / kGiB);
    estimate = std::max(estimate, m.at(4096, 1000));
    for (const auto& p : points) {
      if (p.ran && rss_in(p, stage) > 0)
        std::printf("  %5d x %5d: measured %.3f GiB, model %.3f GiB\n", p.ranks, p.steps,
                    rss_in(p, stage) / kGiB, m.at(p.ranks, p.steps) / kGiB);
    }
  }
  if (estimate <= 0) return;
  std::printf(
      "peak RSS at 4,096 ranks x 1,000 steps: estimated %.2f GiB (%.0f bytes per rank-step)",
      estimate / kGiB, estimate / 4096e3);
  if (target != nullptr)
    std::printf(", measured %.2f GiB (%.0f bytes per rank-step)", target->peak_rss / kGiB,
                target->peak_rss / 4096e3);
  std::printf("\n");
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --ncclwatch PATH [--ranks R --steps S | --points RxS,RxS,...] "
               "[--kernels K] [--kernel-gap-ns G] [--buckets B] [--ranks-per-host H] [--dir DIR] "
               "[--max-disk-gb G] "
               "[--keep]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--ncclwatch")
      a.ncclwatch = value();
    else if (arg == "--ranks")
      a.ranks = std::atoi(value().c_str());
    else if (arg == "--steps")
      a.steps = std::atoi(value().c_str());
    else if (arg == "--kernels")
      a.kernels = std::atoi(value().c_str());
    else if (arg == "--buckets")
      a.buckets = std::atoi(value().c_str());
    else if (arg == "--kernel-gap-ns")
      a.kernel_gap_ns = std::atoll(value().c_str());
    else if (arg == "--ranks-per-host")
      a.ranks_per_host = std::atoi(value().c_str());
    else if (arg == "--dir")
      a.dir = value();
    else if (arg == "--max-disk-gb")
      a.max_disk_gb = std::atof(value().c_str());
    else if (arg == "--keep")
      a.keep = true;
    else if (arg == "--points") {
      const std::string list = value();
      for (std::size_t at = 0; at < list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        int r = 0, st = 0;
        if (std::sscanf(list.substr(at, comma - at).c_str(), "%dx%d", &r, &st) != 2 || r < 1 ||
            st < 1)
          return usage(argv[0]);
        a.points.emplace_back(r, st);
        at = comma + 1;
      }
    } else
      return usage(argv[0]);
  }
  if (a.ncclwatch.empty() || (a.ranks > 0) != (a.steps > 0) || a.kernels < 8 || a.buckets < 1 ||
      a.kernel_gap_ns < 0 || a.ranks_per_host < 1)
    return usage(argv[0]);
  if (a.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    a.dir = tmp != nullptr ? tmp : "/tmp";
  }
  std::vector<Point> points;
  if (a.ranks > 0) {
    points.push_back(point(a.ranks, a.steps));
  } else if (!a.points.empty()) {
    for (const auto& [r, st] : a.points) points.push_back(point(r, st));
  } else {
    // Length at fixed width, then width at fixed length (64 x 100 once).
    for (int s : {100, 200, 400, 800}) points.push_back(point(64, s));
    for (int r : {16, 256, 512}) points.push_back(point(r, 100));
  }
  std::printf(
      "full-mode DDP jobs: %d compute kernels and %d all-reduce buckets per step, %d ranks "
      "per host; `%s report DIR --json` in a child process; %ld cores, load %.1f\n",
      a.kernels, a.buckets, a.ranks_per_host, a.ncclwatch.c_str(), sysconf(_SC_NPROCESSORS_ONLN),
      [] {
        double l[1] = {0};
        return getloadavg(l, 1) == 1 ? l[0] : -1.0;
      }());
  bool ok = true;
  for (auto& p : points) ok = run_point(a, p) && ok;
  summarize(points, 64, 100);
  return ok ? 0 : 1;
}

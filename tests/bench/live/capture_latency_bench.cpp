// Capture start latency (label bench; issue 22): the time from a `ncclwatch capture` request to
// the first full-detail record of its window in every rank's trace file, on a running job: RANKS
// ranks of fake_train (10 ms steps) started by fake_launcher under a plain LD_PRELOAD of the real
// shim (NCCLWATCH_DETAIL=windows), with NCCLWATCH_CAPTURE=off and NCCLWATCH_AUTO_CAPTURE=off so
// that no window is open when a request comes. Requests are made with the CLI's own code
// (live::ask_capture, what `ncclwatch capture` runs after parsing its options), through the two
// paths of docs/always-on.md ("How a request reaches the ranks"), taking turns:
//  - segments: `ncclwatch capture --job J` on this node: into every rank's segment (the drain
//    thread reads it every drain period) and into the control file; the asker plans 1 s ahead;
//  - file: `ncclwatch capture --job J --dir DIR` as on a node where none of the job's ranks run
//    (ask_capture given a shared-memory directory with no segment in it): the control file only,
//    which each drain thread looks at once a second; the asker plans 3 s ahead.
// Each with `--seconds 0.5` and with `--steps 20`. The bench follows the trace files as they grow
// (every millisecond) and notes, per rank, when the window's open mark and its first detail record
// reached the file. A request counts its slowest rank (the window has started on the job when
// every rank has it). Per path and unit it prints the median and max of:
//  - lead: where the asker put the window's start, after the request (by design: far enough for
//    every rank to notice in time, so that all start at the same step);
//  - noticed: request -> the rank's open mark in the file (seconds windows: the mark is written
//    when the request is applied; a steps window's mark waits for its first step);
//  - opened: request -> the first detail record's own time (the window's start on the rank);
//  - written: request -> that record in the trace file: the capture start latency.
// By design `written` is the lead plus a few milliseconds: a window starts where the asker put it
// (so that every rank starts at the same step), not when the request arrives; the delivery itself
// is `noticed`.
// All times are CLOCK_MONOTONIC, the shim's host clock, on this host. Timings are reported, never
// asserted; the bench fails only when a window never opens or never closes.
//
//   capture_latency_bench <fake_launcher> <fake_train> <libncclwatch.so>
//                         [--ranks N] [--requests K] [--budget-s S]
// --requests: per path and unit (default 6); --budget-s: no new request after S seconds (100).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "live/capture_asker.h"
#include "ncclwatch/format.h"
#include "process.h"
#include "trace/segment_view.h"

namespace {

namespace fs = std::filesystem;
using namespace ncclwatch;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1'000'000'000;
constexpr double kWindowSeconds = 0.5;
constexpr uint64_t kWindowSteps = 20;
constexpr std::size_t kMaxDetails = 1 << 20;  // per rank and request: far more than a window's

int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * kSecond + ts.tv_nsec;
}

void sleep_ms(int ms) {
  timespec ts{0, ms * kMs};
  nanosleep(&ts, nullptr);
}

// A detail record's own time, the one the drain thread judges it by (CapturePlan::detail_time):
// host records their entry, GPU records their start on the GPU.
int64_t record_time(const format::Record& r) {
  switch (r.prefix.kind) {
    case format::RecordKind::kCall:
      return r.call.t_enter_ns;
    case format::RecordKind::kGroup:
      return r.group.t_enter_ns;
    case format::RecordKind::kKernel:
      return r.kernel.start_ns;
    case format::RecordKind::kKernelLink:
      return r.link.t_ns;
    case format::RecordKind::kCollGpu:
      return r.coll_gpu.start_ns;
    case format::RecordKind::kLaunch:
      return r.launch.t_enter_ns;
    case format::RecordKind::kNvtx:
      return r.nvtx.start_ns;
    default:
      return -1;
  }
}

// What the bench has read of one rank (a process, across its trace parts), with the bench's
// clock at the poll that read each record.
struct RankSeen {
  struct Window {
    int64_t open_seen = -1;  // the open mark read
    int64_t start_ns = 0;    // its start (host clock)
    int64_t close_seen = -1;
  };
  std::map<uint64_t, Window> windows;
  uint64_t steps = 0;  // step summaries read
  // Detail records read since a request (armed), in file order. None is written outside
  // windows here, but the window before may still add GPU records that came late (a closed
  // window is remembered for them), so the new window's first is the first at or after its start.
  struct Detail {
    int64_t time = 0;  // its own (record_time())
    int64_t seen = 0;
  };
  bool armed = false;
  std::vector<Detail> details;

  // The first detail record of window `id` read so far; nullptr: none yet, or no open mark.
  const Detail* first_of(uint64_t id) const {
    const auto w = windows.find(id);
    if (w == windows.end() || w->second.open_seen < 0) return nullptr;
    for (const Detail& d : details)
      if (d.time >= w->second.start_ns) return &d;
    return nullptr;
  }
};

// Follows the job's trace files (ncclwatch.<host>.<pid>[.<part>].trace) as the drain threads
// append to them: new files are looked for every 50 ms, known ones read every poll.
struct TraceFollower {
  struct File {
    int fd = -1;
    int64_t pid = -1;  // from the header, once it is whole
    off_t offset = 0;  // bytes consumed
  };
  std::string dir;
  std::map<std::string, File> files;
  std::map<int64_t, RankSeen> ranks;
  int64_t next_scan = 0;

  ~TraceFollower() {
    for (auto& [path, f] : files)
      if (f.fd >= 0) ::close(f.fd);
  }

  void scan(int64_t now) {
    if (now < next_scan) return;
    next_scan = now + 50 * kMs;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.starts_with("ncclwatch.") || !name.ends_with(".trace")) continue;
      if (files.count(e.path().string()) != 0) continue;
      File f;
      f.fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
      if (f.fd >= 0) files.emplace(e.path().string(), f);
    }
  }

  void take(RankSeen& r, const format::Record& rec, int64_t now) {
    const auto kind = rec.prefix.kind;
    if (kind == format::RecordKind::kStep) {
      ++r.steps;
    } else if (kind == format::RecordKind::kWindow) {
      RankSeen::Window& w = r.windows[rec.window.id];
      if (rec.prefix.u8b == static_cast<uint8_t>(format::WindowEvent::kOpen)) {
        w.open_seen = now;
        w.start_ns = rec.window.start_ns;
      } else {
        w.close_seen = now;
      }
    } else if (format::is_detail_kind(kind) && r.armed && r.details.size() < kMaxDetails) {
      r.details.push_back({record_time(rec), now});
    }
  }

  void poll() {
    const int64_t now = mono_ns();
    scan(now);
    std::vector<format::Record> buf(1024);
    for (auto& [path, f] : files) {
      if (f.pid < 0) {
        format::TraceHeader h{};
        if (::pread(f.fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) ||
            h.magic != format::kTraceMagic)
          continue;
        f.pid = h.process.pid;
        f.offset = sizeof h;
      }
      RankSeen& r = ranks[f.pid];
      for (;;) {
        const ssize_t n = ::pread(f.fd, buf.data(), buf.size() * sizeof(format::Record), f.offset);
        const std::size_t whole = n > 0 ? static_cast<std::size_t>(n) / sizeof(format::Record) : 0;
        for (std::size_t i = 0; i < whole; ++i) take(r, buf[i], now);
        f.offset += static_cast<off_t>(whole * sizeof(format::Record));
        if (whole < buf.size()) break;
      }
    }
  }

  // Polls every millisecond until done() or the bench's clock passes `until`.
  template <typename Done>
  bool follow_until(int64_t until, Done done) {
    for (;;) {
      poll();
      if (done()) return true;
      if (mono_ns() > until) return false;
      sleep_ms(1);
    }
  }
};

struct Sample {
  double lead_ms = NAN, noticed_ms = NAN, opened_ms = NAN, written_ms = NAN, ask_ms = NAN;
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 != 0 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string figures(const std::vector<Sample>& samples, double Sample::*field, int decimals = 0) {
  std::vector<double> v;
  for (const Sample& s : samples)
    if (!std::isnan(s.*field)) v.push_back(s.*field);
  if (v.empty()) return "-";
  char out[64];
  std::snprintf(out, sizeof out, "%.*f / %.*f", decimals, median(v), decimals,
                *std::max_element(v.begin(), v.end()));
  return out;
}

pid_t start_job(const std::string& launcher, const std::string& train, const std::string& shim,
                int ranks, const std::string& dir, const std::string& job, const std::string& log) {
  std::vector<std::string> argv = {launcher,
                                   "--nproc",
                                   std::to_string(ranks),
                                   "--env",
                                   "LD_PRELOAD=" + shim,
                                   "--env",
                                   "NCCLWATCH_DIR=" + dir,
                                   "--env",
                                   "NCCLWATCH_JOB=" + job,
                                   "--env",
                                   "NCCLWATCH_EXIT_LINE=off",
                                   "--env",
                                   "NCCLWATCH_CAPTURE=off",
                                   "--env",
                                   "NCCLWATCH_AUTO_CAPTURE=off",
                                   "--",
                                   train,
                                   "--steps",
                                   "100000000",  // stopped by the bench
                                   "--bucket-mb",
                                   "1"};
  return ncclwatch::test_support::start_process(argv, log);
}

// The job's segments once every rank has learned its steps (step numbers and a step time in its
// drain checkpoint); the median step time, or 0 when not ready.
int64_t job_step_ns(const std::string& job, int ranks) {
  std::vector<int64_t> step_ns;
  for (const auto& name : trace::list_segments(job)) {
    trace::SegmentView view;
    if (!view.open(name)) continue;
    const format::DrainCheckpoint cp = view.drain_checkpoint();
    if (cp.last_step != format::kNoStep && cp.step_ns > 0) step_ns.push_back(cp.step_ns);
  }
  if (step_ns.size() != static_cast<std::size_t>(ranks)) return 0;
  std::sort(step_ns.begin(), step_ns.end());
  return step_ns[step_ns.size() / 2];
}

// Where each rank of the job is (its drain checkpoint): evidence when a window does not start.
void print_checkpoints(const std::string& job) {
  for (const auto& name : trace::list_segments(job)) {
    trace::SegmentView view;
    if (!view.open(name)) continue;
    const format::DrainCheckpoint cp = view.drain_checkpoint();
    std::printf("  pid %lld: step %llu, median step %.2f ms\n",
                static_cast<long long>(view.header().process.pid),
                static_cast<unsigned long long>(cp.last_step),
                static_cast<double>(cp.step_ns) / 1e6);
  }
}

// A killed rank leaves its segment behind: the job's own are removed (no other job's).
void remove_segments(const std::string& job) {
  for (const auto& name : trace::list_segments(job)) {
    trace::SegmentView view;
    std::string why;
    if (view.open(name) && view.job() == job) view.remove(why);
  }
}

struct Path {
  const char* name;
  bool segments;
};
struct Unit {
  const char* name;
  bool steps;
};
struct Job {
  std::string name, dir;
  std::string no_segments;  // a shared-memory directory with no segment: another node's view
  int64_t step_ns = 0;
};

// One request, made as `ncclwatch capture` makes it, and its window followed on every rank
// until it has closed (so that the next request's first detail record is its own). false: the
// window did not start or did not end (printed, with where the ranks are).
bool measure(TraceFollower& follower, const Job& job, const Path& path, const Unit& unit,
             const std::string& key, int k, Sample& s) {
  live::CaptureOptions options;
  options.job = job.name;
  options.asker = "capture_latency_bench";
  if (!path.segments) {
    options.dir = job.dir;
    options.shm_dir = job.no_segments;
  }
  if (unit.steps) {
    options.steps = kWindowSteps;
  } else {
    options.seconds = kWindowSeconds;
  }
  follower.poll();
  for (auto& [pid, r] : follower.ranks) {
    r.armed = true;
    r.details.clear();
  }
  const int64_t t0 = mono_ns();
  const live::CaptureOutcome out = live::ask_capture(options);
  s.ask_ms = static_cast<double>(mono_ns() - t0) / 1e6;
  if (!out.ok) {
    std::printf("FAIL: %s: ask_capture: %s\n", key.c_str(), out.error.c_str());
    return false;
  }
  const format::CaptureAsk& ask = out.ask;
  int64_t lead_ns = 0;
  if (ask.unit == format::kCaptureSeconds) {
    lead_ns = static_cast<int64_t>(ask.first) - ask.requested_realtime_ns;
  } else if (out.step_ns > 0 && out.last_step != format::kNoStep) {
    lead_ns = static_cast<int64_t>(ask.first - out.last_step) * out.step_ns;
  }
  if ((ask.unit == format::kCaptureSteps) != unit.steps)
    std::printf("note: %s asked in %s (no step numbers known to the asker)\n", key.c_str(),
                ask.unit == format::kCaptureSteps ? "steps" : "seconds");
  s.lead_ms = static_cast<double>(lead_ns) / 1e6;
  const int64_t window_ns = unit.steps ? static_cast<int64_t>(kWindowSteps) * job.step_ns
                                       : static_cast<int64_t>(kWindowSeconds * 1e9);
  // Generous: a busy machine only makes it slower; a window that never comes is a bug.
  const int64_t open_by = t0 + lead_ns + 20 * kSecond;
  const bool opened = follower.follow_until(open_by, [&] {
    return std::all_of(follower.ranks.begin(), follower.ranks.end(),
                       [&](const auto& r) { return r.second.first_of(ask.id) != nullptr; });
  });
  if (!opened) {
    std::printf("FAIL: %s: window %#llx (%s) did not start on every rank within %.0f s:\n",
                key.c_str(), static_cast<unsigned long long>(ask.id), live::describe(out).c_str(),
                static_cast<double>(open_by - t0) / 1e9);
    for (const auto& [pid, r] : follower.ranks) {
      const auto w = r.windows.find(ask.id);
      std::printf("  pid %lld: open mark %s, first detail record %s, %llu step summaries\n",
                  static_cast<long long>(pid),
                  w != r.windows.end() && w->second.open_seen >= 0 ? "read" : "none",
                  r.first_of(ask.id) != nullptr ? "read" : "none",
                  static_cast<unsigned long long>(r.steps));
    }
    std::printf("  the asker planned from step %llu at %.2f ms a step; the ranks now:\n",
                static_cast<unsigned long long>(out.last_step),
                static_cast<double>(out.step_ns) / 1e6);
    print_checkpoints(job.name);
    return false;
  }
  // The slowest rank counts.
  const auto later = [](double a, double b) { return std::isnan(a) ? b : std::fmax(a, b); };
  for (auto& [pid, r] : follower.ranks) {
    const auto ms = [&](int64_t t) { return static_cast<double>(t - t0) / 1e6; };
    const RankSeen::Detail& first = *r.first_of(ask.id);
    if (!unit.steps) s.noticed_ms = later(s.noticed_ms, ms(r.windows.at(ask.id).open_seen));
    s.opened_ms = later(s.opened_ms, ms(first.time));
    s.written_ms = later(s.written_ms, ms(first.seen));
    r.armed = false;
    r.details.clear();
  }
  std::printf(
      "%-17s #%d: ask %5.1f ms, lead %6.0f ms, noticed %6s ms, opened %6.0f ms, "
      "written %6.0f ms\n",
      key.c_str(), k + 1, s.ask_ms, s.lead_ms,
      std::isnan(s.noticed_ms) ? "-" : std::to_string(std::lround(s.noticed_ms)).c_str(),
      s.opened_ms, s.written_ms);
  // The next request only once this window has closed everywhere, so that the next first
  // detail record is the next window's.
  const bool closed = follower.follow_until(mono_ns() + window_ns + 20 * kSecond, [&] {
    return std::all_of(follower.ranks.begin(), follower.ranks.end(), [&](const auto& r) {
      const auto w = r.second.windows.find(ask.id);
      return w != r.second.windows.end() && w->second.close_seen >= 0;
    });
  });
  if (!closed) {
    std::printf("FAIL: %s: window %#llx never closed on every rank\n", key.c_str(),
                static_cast<unsigned long long>(ask.id));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: capture_latency_bench <fake_launcher> <fake_train> <libncclwatch.so> "
                 "[--ranks N] [--requests K] [--budget-s S]\n");
    return 2;
  }
  const std::string launcher = argv[1], train = argv[2], shim = argv[3];
  int ranks = 2, requests = 6;
  double budget_s = 100;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ranks") {
      ranks = std::max(1, std::atoi(argv[i + 1]));
    } else if (a == "--requests") {
      requests = std::max(1, std::atoi(argv[i + 1]));
    } else if (a == "--budget-s") {
      budget_s = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "capture_latency_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const int64_t bench_start = mono_ns();
  const char* tmp = std::getenv("TMPDIR");
  std::string work = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                     "/ncclwatch_capture_latency.XXXXXX";
  if (mkdtemp(work.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  Job job{"capture-latency-" + std::to_string(getpid()), work + "/traces", work + "/no-segments"};
  fs::create_directories(job.dir);
  fs::create_directories(job.no_segments);
  const pid_t launcher_pid =
      start_job(launcher, train, shim, ranks, job.dir, job.name, work + "/job.stderr");
  if (launcher_pid <= 0) {
    std::perror("fork");
    return 1;
  }

  TraceFollower follower;
  follower.dir = job.dir;
  int failed = 0;
  // Ready when every rank has learned its steps and written step summaries (the file path's
  // asker reads the newest summaries to name step numbers).
  const bool ready = follower.follow_until(bench_start + 60 * kSecond, [&] {
    job.step_ns = job_step_ns(job.name, ranks);
    if (job.step_ns == 0 || follower.ranks.size() != static_cast<std::size_t>(ranks)) return false;
    return std::all_of(follower.ranks.begin(), follower.ranks.end(),
                       [](const auto& r) { return r.second.steps > 0; });
  });
  if (!ready) {
    std::printf("FAIL: the job's %d ranks never learned their steps within 60 s\n", ranks);
    failed = 1;
  } else {
    std::printf("job: %d ranks of fake_train, step %.1f ms; ready after %.1f s\n", ranks,
                static_cast<double>(job.step_ns) / 1e6,
                static_cast<double>(mono_ns() - bench_start) / 1e9);
  }

  const Path paths[] = {{"segments", true}, {"file", false}};
  const Unit units[] = {{"seconds", false}, {"steps", true}};
  std::map<std::string, std::vector<Sample>> samples;
  const int64_t budget_end = bench_start + static_cast<int64_t>(budget_s * 1e9);
  for (int k = 0; !failed && k < requests && mono_ns() < budget_end; ++k) {
    for (const Path& path : paths) {
      for (const Unit& unit : units) {
        if (failed || mono_ns() >= budget_end) break;
        const std::string key = std::string(path.name) + " " + unit.name;
        Sample s;
        if (!measure(follower, job, path, unit, key, k, s)) {
          failed = 1;
          break;
        }
        samples[key].push_back(s);
      }
    }
  }

  kill(launcher_pid, SIGTERM);
  int status = 0;
  waitpid(launcher_pid, &status, 0);
  remove_segments(job.name);
  if (failed) {
    std::ifstream log(work + "/job.stderr");
    std::printf("the job's stderr:\n%s",
                std::string(std::istreambuf_iterator<char>(log), {}).c_str());
  }
  fs::remove_all(work);

  double load = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = 0;
    std::fclose(f);
  }
  std::printf(
      "\ncapture start latency, ms (median / max over requests; a request counts its "
      "slowest of %d ranks), %ld CPUs, load average %.1f, %.0f s in all\n",
      ranks, sysconf(_SC_NPROCESSORS_ONLN), load,
      static_cast<double>(mono_ns() - bench_start) / 1e9);
  std::printf("%-17s %4s %13s %13s %13s %13s %11s\n", "path unit", "n", "lead", "noticed", "opened",
              "written", "ask");
  for (const auto& [key, v] : samples) {
    std::printf("%-17s %4zu %13s %13s %13s %13s %11s\n", key.c_str(), v.size(),
                figures(v, &Sample::lead_ms).c_str(), figures(v, &Sample::noticed_ms).c_str(),
                figures(v, &Sample::opened_ms).c_str(), figures(v, &Sample::written_ms).c_str(),
                figures(v, &Sample::ask_ms, 1).c_str());
  }
  std::printf(
      "lead: the window's start as the asker planned it; noticed: the open mark in the "
      "trace file (seconds windows); opened: the first detail record's own time; written: "
      "that record in the trace file\n");
  return failed;
}

// The two tiers and the disk budget end to end (docs/always-on.md): four ranks of fake_train
// under a plain LD_PRELOAD of the real shim, started by fake_launcher like torchrun, read back
// with the collector's job loader (which joins a process's trace parts).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ncclwatch/job_steps.h"
#include "process.h"
#include "trace/job_loader.h"
#include "trace/segment_view.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::model::JobTrace;
using ncclwatch::model::RankTrace;
namespace format = ncclwatch::format;

// A step of about 10 ms of fake GPU time, so hundreds of steps take a few seconds. Not shorter:
// these jobs' steps are learned from the gaps between collectives on every rank alike, and beside
// two CPU hogs 1 ms steps of 4 ranks on 2 cores are scheduler noise (a job of 600 ran at 33 ms a
// step): the learner then rightly finds no step and every rank's steps are seconds of the clock.
const std::vector<std::string> kFastSteps = {"--fwd-us", "3000", "--bwd-us",    "6000",
                                             "--opt-us", "1000", "--bucket-mb", "1"};

struct JobRun {
  int status = -1;
  std::string dir;
  std::string stderr_text;
  std::string err_path;
  // A failed test's job stays on disk for a look (its path on stderr).
  ~JobRun() {
    if (dir.empty()) return;
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "tiers_test: the job's directory is kept: %s\n", dir.c_str());
      return;
    }
    fs::remove_all(dir);
  }
};

// The job with every rank's step summaries kept in the model (the loader keeps them only for a
// whole-run window: the report streams them).
JobTrace load_with_steps(const std::string& dir) {
  ncclwatch::trace::JobLoadOptions options;
  options.keep_steps = true;
  return ncclwatch::trace::load_job(dir, options);
}

// One rank's own environment variable (fake_launcher's --env-rank).
struct RankEnv {
  int rank;
  std::string variable;  // KEY=VAL
};

// Starts fake_launcher with 4 ranks of fake_train; the launcher's pid (wait_job waits for it).
pid_t start_job(JobRun& run, std::vector<std::string> args, const std::vector<std::string>& env,
                const std::vector<RankEnv>& rank_env = {}) {
  static int counter = 0;
  run.dir =
      ::testing::TempDir() + "tiers_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  fs::create_directories(run.dir);
  std::vector<std::string> argv = {FAKE_LAUNCHER,
                                   "--nproc",
                                   "4",
                                   "--env",
                                   std::string("LD_PRELOAD=") + SHIM_LIB,
                                   "--env",
                                   "NCCLWATCH_DIR=" + run.dir,
                                   "--env",
                                   "NCCLWATCH_JOB=tiers",
                                   "--env",
                                   "NCCLWATCH_EXIT_LINE=off"};
  for (const auto& e : env) {
    argv.push_back("--env");
    argv.push_back(e);
  }
  for (const auto& e : rank_env) {
    argv.push_back("--env-rank");
    argv.push_back(std::to_string(e.rank));
    argv.push_back(e.variable);
  }
  argv.push_back("--");
  argv.push_back(FAKE_TRAIN);
  for (const auto& a : kFastSteps) argv.push_back(a);
  for (const auto& a : args) argv.push_back(a);
  run.err_path = run.dir + "/stderr.txt";
  return ncclwatch::test_support::start_process(argv, run.err_path);
}

void wait_job(JobRun& run, pid_t pid) {
  waitpid(pid, &run.status, 0);
  std::ifstream in(run.err_path);
  run.stderr_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void run_job(JobRun& run, std::vector<std::string> args, const std::vector<std::string>& env,
             const std::vector<RankEnv>& rank_env = {}) {
  wait_job(run, start_job(run, std::move(args), env, rank_env));
}

// `ncclwatch ARGS...`: its stdout and stderr.
std::string run_cli(const std::vector<std::string>& args) {
  std::string command = NCCLWATCH_CLI;
  for (const auto& a : args) command += " '" + a + "'";
  command += " 2>&1";
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[4096];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
  }
  return out;
}

// A window's host detail: every call inside [start, end), and as many collectives as the step
// summaries count for the steps it covers -- at least those of the steps wholly inside, at most
// those of the steps it touches (plus fake_train's set-up collective). Counted through the
// summaries, because what a step is (the period learned from the collective sequence) can differ
// on a busy machine. GPU records are judged when they are drained, so a few kernels of a step
// near a window's edge may fall on either side (docs/always-on.md).
void expect_window_calls(const RankTrace& t, const ncclwatch::model::WindowMark& w) {
  std::size_t collectives = 0;
  for (const auto& c : t.calls) {
    EXPECT_GE(c.enter_ns, w.start_ns);
    EXPECT_LT(c.enter_ns, w.end_ns);
    collectives += format::is_collective(c.func);
  }
  uint64_t inside = 0, touched = 0;
  for (const auto& st : t.steps) {
    const int64_t end = st.start_ns + int64_t{st.duration_us} * 1000;
    if (st.start_ns < w.end_ns && end > w.start_ns) touched += st.calls;
    if (st.start_ns >= w.start_ns && end <= w.end_ns) inside += st.calls;
  }
  EXPECT_GT(collectives, 0u);
  EXPECT_GE(collectives, inside);
  EXPECT_LE(collectives, touched + 2);
}

std::string problems_of(const JobTrace& job) {
  std::string out;
  for (const auto& p : job.problems) out += p.source + ": " + p.message + "\n";
  return out;
}

// The job's four ranks, read without a problem (call through ASSERT_NO_FATAL_FAILURE).
void load_four_ranks(const JobRun& run, JobTrace* job) {
  *job = load_with_steps(run.dir);
  EXPECT_TRUE(job->problems.empty()) << problems_of(*job);
  ASSERT_EQ(job->ranks.size(), 4u);
}

// A plain LD_PRELOAD gets NCCLWATCH_DETAIL=windows with NCCLWATCH_CAPTURE=first:50: every rank
// writes a summary of every step, and every call, kernel and launch of the first 50 steps only,
// in one schedule window with the same id and steps on every rank.
TEST(Tiers, DefaultsKeepDetailForTheFirst50StepsAndSummariesThroughout) {
  JobRun run;
  // Longer than the 3 s the summarizer waits for NVTX step ranges before it takes the collective
  // sequence's steps (step_summarizer.h, nvtx_wait_ns): in a shorter job the steps may be known
  // only at exit, and then the first window covers the whole run (with 1 ms steps: failed 1 run
  // in 12 at 150 steps, 3 in 20 at 400). 800 steps of 10 ms: 8 s on a quiet machine.
  // Capture by itself off: a busy machine's own slowdowns would add windows (its test is below).
  constexpr uint32_t kSteps = 800;
  run_job(run, {"--steps", std::to_string(kSteps)}, {"NCCLWATCH_AUTO_CAPTURE=off"});
  ASSERT_EQ(run.status, 0) << run.stderr_text;
  JobTrace job;
  ASSERT_NO_FATAL_FAILURE(load_four_ranks(run, &job));
  const auto& first = job.ranks[0];
  ASSERT_EQ(first.windows.size(), 1u);
  const auto& w0 = first.windows[0];
  for (const RankTrace& t : job.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    ASSERT_EQ(t.windows.size(), 1u);
    const auto& w = t.windows[0];
    EXPECT_EQ(w.trigger, format::WindowTrigger::kSchedule);
    EXPECT_TRUE(w.closed);
    EXPECT_EQ(w.id, w0.id);
    EXPECT_EQ(w.first_step, w0.first_step);
    // 50 steps, or more where the steps were learned after the 50th (NVTX is waited for 3 s):
    // then the window ends after the newest record it kept (capture_plan.h, kLateNs).
    EXPECT_GE(w.end_step, w.first_step + 50);
    EXPECT_GT(w.detail_records, 0u);
    // Summaries throughout: past the window, and counting (nearly) every collective of the run
    // (on a busy machine the step learner may relearn and lose a few steps: step_learner.h).
    uint64_t summarized = 0, after = 0;
    for (const auto& st : t.steps) {
      summarized += st.calls;
      after += st.step >= w.end_step;
    }
    EXPECT_GT(after, 0u) << "window steps " << w.first_step << "-" << w.end_step << ", "
                         << t.steps.size() << " summaries";
    EXPECT_GE(summarized, 4u * kSteps * 3 / 4);
    expect_window_calls(t, w);
    EXPECT_FALSE(t.kernels.empty());
    for (const auto& st : t.steps) {
      const bool detail = (st.prefix.flags & format::kStepDetail) != 0;
      EXPECT_EQ(detail, st.step < w.end_step) << "step " << st.step;
    }
  }
}

// NCCLWATCH_MAX_MB: a rank's trace is written in parts of an eighth of the budget; past the
// budget the oldest detail goes (counted in the losses) and every summary stays; the job loader
// reads each process's parts as one rank.
TEST(Tiers, TheDiskBudgetEvictsTheOldestDetailAndKeepsEverySummary) {
  JobRun run;
  run_job(run, {"--steps", "800"}, {"NCCLWATCH_DETAIL=all", "NCCLWATCH_MAX_MB=1"});
  ASSERT_EQ(run.status, 0) << run.stderr_text;
  std::map<std::string, uint64_t> bytes_of_process;  // host.pid -> bytes of its parts
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(run.dir)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".trace")) continue;
    ++files;
    // ncclwatch.<host>.<pid>[.<n>].trace
    const std::string rest = name.substr(10, name.size() - 16);
    const auto dot = rest.find('.', rest.find('.') + 1);
    bytes_of_process[rest.substr(0, dot)] += fs::file_size(e.path());
  }
  ASSERT_EQ(bytes_of_process.size(), 4u);
  EXPECT_GT(files, 8u) << "each rank rolled over to more parts";
  for (const auto& [process, bytes] : bytes_of_process)
    EXPECT_LE(bytes, (1u << 20) + (1u << 20) / 8 + 64 * 1024) << process;

  JobTrace job;
  ASSERT_NO_FATAL_FAILURE(load_four_ranks(run, &job));
  for (const RankTrace& t : job.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    EXPECT_TRUE(t.info.complete);
    EXPECT_GT(t.info.losses.counts.detail_evicted, 0u);
    uint64_t summarized = 0;
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
      summarized += t.steps[i].calls;
      if (i > 0) {
        EXPECT_GT(t.steps[i].step, t.steps[i - 1].step);
      }
    }
    EXPECT_GE(summarized, 4u * 800 * 3 / 4);  // every summary kept (see above)
    // What detail is left is the newest: no call from the first steps.
    ASSERT_FALSE(t.calls.empty());
    EXPECT_GT(t.calls.front().enter_ns, t.steps[10].start_ns);
    EXPECT_GE(t.calls.back().seq + 1, 800u * 4) << "the last call is the run's last";
  }
}

// `ncclwatch capture` on a running 4-rank job (NCCLWATCH_CAPTURE=off: no detail but for the
// request): every rank captures the same 20 steps in full detail, in one on-demand window with the
// same id. The job is waited for only by what it writes (segments, drain checkpoints), never by
// time, so a busy machine only makes it slower.
TEST(Tiers, CaptureOnARunningJobTakesTheSameStepsOnEveryRank) {
  JobRun run;
  const std::string job = "tiers-capture-" + std::to_string(getpid());
  const pid_t launcher =
      start_job(run, {"--steps", "1500"},
                {"NCCLWATCH_CAPTURE=off", "NCCLWATCH_AUTO_CAPTURE=off", "NCCLWATCH_JOB=" + job});
  ASSERT_GT(launcher, 0);
  // Every rank has learned its steps and summarized some (the asker then names step numbers and
  // knows how many steps its margin takes, rather than asking for seconds).
  bool ready = false;
  for (int i = 0; i < 6000 && !ready; ++i) {
    std::size_t with_steps = 0;
    for (const auto& name : ncclwatch::trace::list_segments(job)) {
      ncclwatch::trace::SegmentView view;
      if (!view.open(name)) continue;
      const format::DrainCheckpoint cp = view.drain_checkpoint();
      // Learned steps, not seconds of the clock counted while the rank learns them.
      if (cp.last_step != format::kNoStep && cp.step_ns > 0 &&
          cp.steps_from == format::checkpoint_steps_from(format::StepSource::kCollectives))
        ++with_steps;
    }
    ready = with_steps == 4;
    if (!ready) usleep(10'000);
  }
  ASSERT_TRUE(ready) << "the ranks never learned their steps";
  const std::string out = run_cli({"capture", "--job", job, "--steps", "20"});
  EXPECT_NE(out.find("steps "), std::string::npos) << out;
  EXPECT_NE(out.find("4 ranks of this node"), std::string::npos) << out;
  wait_job(run, launcher);
  ASSERT_EQ(run.status, 0) << run.stderr_text;

  JobTrace loaded;
  ASSERT_NO_FATAL_FAILURE(load_four_ranks(run, &loaded));
  const auto& w0 = loaded.ranks[0].windows;
  ASSERT_EQ(w0.size(), 1u);
  for (const RankTrace& t : loaded.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    ASSERT_EQ(t.windows.size(), 1u);
    const auto& w = t.windows[0];
    EXPECT_EQ(w.trigger, format::WindowTrigger::kOnDemand);
    EXPECT_EQ(w.id, w0[0].id);
    EXPECT_EQ(w.first_step, w0[0].first_step);
    EXPECT_EQ(w.end_step, w.first_step + 20);
    EXPECT_TRUE(w.closed);
    EXPECT_GT(w.requested_realtime_ns, 0);
    expect_window_calls(t, w);
    EXPECT_FALSE(t.kernels.empty());
    for (const auto& st : t.steps) {
      const bool detail = (st.prefix.flags & format::kStepDetail) != 0;
      EXPECT_EQ(detail, st.step >= w.first_step && st.step < w.end_step) << "step " << st.step;
    }
  }
}

// A rank that cannot learn its step from the gaps between its collectives takes the steps the
// first rank to learn told the job through the trace directory (ncclwatch/job_steps.h): its
// summaries are the job's steps, each starting at the same collective as on the other ranks,
// rather than seconds of the clock or a step of its own. Rank 3 is made unable to learn by a
// testing-only setting: the fake NCCL is synchronous on the host, so every fake rank's gaps are
// its peers' (the noisy rank alone is step_summarizer_test's).
TEST(Tiers, ARankThatCannotLearnItsStepTakesTheJobs) {
  JobRun run;
  constexpr uint32_t kSteps = 400;
  run_job(run, {"--steps", std::to_string(kSteps)},
          {"NCCLWATCH_CAPTURE=off", "NCCLWATCH_AUTO_CAPTURE=off"},
          {{3, "NCCLWATCH_TEST_STEPS_FROM_PEERS=on"}});
  ASSERT_EQ(run.status, 0) << run.stderr_text;
  std::ifstream in(run.dir + "/ncclwatch.tiers.steps");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string error;
  const auto told = format::parse_job_steps_text(text, &error);
  ASSERT_TRUE(told) << error << ": " << text;
  EXPECT_NE(told->rank, 3);
  // One broadcast, then 4 buckets a step on the world comm.
  EXPECT_EQ(told->period, 4u);
  EXPECT_EQ(told->phase, 1u);

  JobTrace job;
  ASSERT_NO_FATAL_FAILURE(load_four_ranks(run, &job));
  for (const RankTrace& t : job.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    std::size_t learned = 0;
    for (const auto& st : t.steps) {
      if (st.prefix.u8a != static_cast<uint8_t>(format::StepSource::kCollectives)) continue;
      ++learned;
      // The step's first collective on the reference comm (its seq): 1 + 4 x step everywhere.
      if (st.arrive_ns != 0) {
        EXPECT_EQ(st.prefix.tid, 1 + 4 * st.step) << "step " << st.step;
      }
    }
    // Every step learned (the last may end early or be cut by the exit).
    EXPECT_GE(learned, kSteps - 2) << t.steps.size() << " summaries";
  }
}

// What the fake libcupti did in each rank (NCCLWATCH_FAKE_CUPTI_COUNTS): kernels run and turned
// into activity records, driver launches and those the shim's callback saw.
struct CuptiCounts {
  uint64_t kernels_run = 0, kernels_recorded = 0, launches = 0, launch_callbacks = 0;
};
std::vector<CuptiCounts> cupti_counts(const std::string& dir) {
  std::vector<CuptiCounts> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with("fake_cupti.")) continue;
    std::ifstream in(e.path());
    CuptiCounts c;
    std::string key;
    uint64_t value = 0;
    while (in >> key >> value) {
      if (key == "kernels_run") c.kernels_run = value;
      if (key == "kernels_recorded") c.kernels_recorded = value;
      if (key == "launches") c.launches = value;
      if (key == "launch_callbacks") c.launch_callbacks = value;
    }
    out.push_back(c);
  }
  return out;
}

// The report's text with its line wrapping undone (runs of white space as one space).
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && !out.empty() && out.back() == ' ') continue;
    out.push_back(space ? ' ' : c);
  }
  return out;
}

bool step_inside(const format::StepRecord& st, int64_t start, int64_t end) {
  return st.start_ns >= start && st.start_ns + int64_t{st.duration_us} * 1000 <= end;
}

// NCCLWATCH_SUMMARY_GPU=auto (the default) on a launch-bound job (69 kernels per 4.5 ms step:
// 69 x 2 us = 3 % of the step): the first steps measure it, and CUPTI's kernel activity and launch
// callbacks then run only for capture windows -- the first one (first:50) and steps 700-719,
// switched on a second of steps ahead and off after. Outside, the summaries are host-only (marked,
// not zeros); the fake libcupti made kernel records and called back for launches only then; the
// report's history says why.
TEST(Tiers, AutoTimesALaunchBoundJobsGpuOnlyForWindows) {
  JobRun run;
  const ncclwatch::test_support::TempDir counts_dir("cupti_counts");  // removed however it ends
  const std::string counts = counts_dir.path().string();
  run_job(run,
          {"--steps", "1200", "--layers", "32", "--fwd-us", "1000", "--bwd-us", "3000", "--opt-us",
           "500"},
          {"NCCLWATCH_CAPTURE=first:50,steps:700-719", "NCCLWATCH_AUTO_CAPTURE=off",
           "NCCLWATCH_FAKE_CUPTI_COUNTS=" + counts});
  ASSERT_EQ(run.status, 0) << run.stderr_text;
  JobTrace job;
  ASSERT_NO_FATAL_FAILURE(load_four_ranks(run, &job));
  for (const RankTrace& t : job.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    ASSERT_EQ(t.windows.size(), 2u);
    const auto& second = t.windows[1];
    EXPECT_EQ(second.first_step, 700u);
    // Off once the first window closed (the auto decision, with its figures), then on ahead of
    // the second window and off after it -- unless this rank's second window came while GPU
    // timing was still on (a busy machine may learn a bucket as its step for a while:
    // step_learner.h; its step 700 then comes early).
    ASSERT_GE(t.gpu_timing.size(), 1u);
    const format::GpuTimingRecord& off = t.gpu_timing[0];
    EXPECT_EQ(off.prefix.u8a, 0);
    EXPECT_EQ(off.prefix.u8b, static_cast<uint8_t>(format::GpuTimingReason::kAuto));
    // 69 kernels per step of 4.5 ms or more (a busy host stretches it): 15 per ms or fewer. A
    // step learned short has its share of the kernels, so the rate is what is checked.
    ASSERT_GT(off.step_ns, 0);
    const double per_ms =
        off.units_per_step_x100 / 100.0 / (static_cast<double>(off.step_ns) / 1e6);
    EXPECT_GE(per_ms, 3.0) << off.units_per_step_x100 << " / " << off.step_ns;
    EXPECT_LE(per_ms, 25.0) << off.units_per_step_x100 << " / " << off.step_ns;
    EXPECT_EQ(off.unit_cost_ns, 2000u);
    EXPECT_GE(off.t_ns, t.windows[0].end_ns - 1'000'000);
    // The spans GPU timing ran in: from the start to the first change, then alternating.
    std::vector<std::pair<int64_t, int64_t>> on_spans = {{INT64_MIN, off.t_ns}};
    for (std::size_t i = 1; i < t.gpu_timing.size(); ++i) {
      const format::GpuTimingRecord& g = t.gpu_timing[i];
      EXPECT_EQ(g.prefix.u8a, i % 2 == 1 ? 1 : 0) << "changes alternate";
      EXPECT_EQ(g.prefix.u8b, static_cast<uint8_t>(format::GpuTimingReason::kWindow));
      if (g.prefix.u8a == 1) on_spans.emplace_back(g.t_ns, INT64_MAX);
      if (g.prefix.u8a == 0) on_spans.back().second = g.t_ns;
    }
    if (second.start_ns > off.t_ns) {
      // The window came after GPU timing went off: on ahead of it, off after it.
      ASSERT_GE(t.gpu_timing.size(), 3u);
      EXPECT_LT(t.gpu_timing[1].t_ns, second.start_ns) << "on ahead of the window";
      EXPECT_GE(t.gpu_timing[2].t_ns, second.end_ns) << "off after it";
    }
    const auto covered = [&](int64_t a, int64_t b) {
      for (const auto& [x, y] : on_spans)
        if (x <= a && b <= y) return true;
      return false;
    };
    const auto untimed = [&](int64_t a, int64_t b) {
      for (const auto& [x, y] : on_spans)
        if (x < b && a < y) return false;
      return true;
    };
    uint64_t host_only = 0, inside = 0;
    for (const auto& st : t.steps) {
      const bool gpu_off = (st.prefix.flags & format::kStepGpuOff) != 0;
      const int64_t end = st.start_ns + int64_t{st.duration_us} * 1000;
      if (untimed(st.start_ns, end)) {
        EXPECT_TRUE(gpu_off) << "step " << st.step;
        EXPECT_EQ(st.compute_us, format::kStepUnknownUs) << "step " << st.step;
        EXPECT_EQ(st.prefix.u8b, static_cast<uint8_t>(format::StepTiming::kNone));
        host_only += gpu_off;
      }
      if (!covered(st.start_ns, end)) {
        EXPECT_TRUE(gpu_off) << "step " << st.step;
      }
      if (step_inside(st, second.start_ns, second.end_ns)) {
        ++inside;
        EXPECT_FALSE(gpu_off) << "step " << st.step;
        EXPECT_EQ(st.prefix.u8b, static_cast<uint8_t>(format::StepTiming::kCupti));
      }
    }
    EXPECT_GT(host_only, 100u);
    EXPECT_GE(inside, 18u);
    bool kernels_in_second = false;
    for (const auto& k : t.kernels) kernels_in_second |= k.start_ns >= second.start_ns;
    EXPECT_TRUE(kernels_in_second);
  }
  // CUPTI made kernel records and called back for launches only while on: the first ~250 steps
  // and ~220 steps ahead of steps 700-719, well under the 1200 steps' kernels.
  const std::vector<CuptiCounts> c = cupti_counts(counts);
  ASSERT_EQ(c.size(), 4u);
  for (const CuptiCounts& r : c) {
    EXPECT_GE(r.kernels_run, 1200u * 69);
    EXPECT_GT(r.kernels_recorded, 0u);
    EXPECT_LT(r.kernels_recorded, r.kernels_run * 3 / 4);
    EXPECT_LT(r.launch_callbacks, r.launches * 3 / 4);
  }
  const std::string report = one_line(run_cli({"report", run.dir}));
  EXPECT_NE(report.find("GPU figures only inside capture windows (auto: "), std::string::npos)
      << report;
}

// A GPU-bound job (4 kernels per 7 ms step: 0.1 %): auto keeps GPU timing on, says so once with
// its figures, and every summary past the first window keeps its GPU figures. One all-reduce per
// step: the step learner takes period 1 only at 768 calls, when the gaps are flat at every
// candidate step up to 64 (step_learner.h), so the job runs well past that.
TEST(Tiers, AutoKeepsTimingAGpuBoundJob) {
  JobRun run;
  const ncclwatch::test_support::TempDir counts_dir("cupti_counts");  // removed however it ends
  const std::string counts = counts_dir.path().string();
  run_job(run,
          {"--steps", "1600", "--layers", "1", "--buckets", "1", "--fwd-us", "2000", "--bwd-us",
           "4000", "--opt-us", "1000"},
          {"NCCLWATCH_AUTO_CAPTURE=off", "NCCLWATCH_FAKE_CUPTI_COUNTS=" + counts});
  ASSERT_EQ(run.status, 0) << run.stderr_text;
  JobTrace job;
  ASSERT_NO_FATAL_FAILURE(load_four_ranks(run, &job));
  for (const RankTrace& t : job.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    ASSERT_EQ(t.gpu_timing.size(), 1u);
    EXPECT_EQ(t.gpu_timing[0].prefix.u8a, 1);
    EXPECT_EQ(t.gpu_timing[0].prefix.u8b, static_cast<uint8_t>(format::GpuTimingReason::kAuto));
    EXPECT_LE(t.gpu_timing[0].units_per_step_x100, 600u);
    ASSERT_EQ(t.windows.size(), 1u);
    uint64_t timed = 0;
    for (const auto& st : t.steps) {
      EXPECT_EQ(st.prefix.flags & format::kStepGpuOff, 0) << "step " << st.step;
      timed += st.step >= t.windows[0].end_step &&
               st.prefix.u8b == static_cast<uint8_t>(format::StepTiming::kCupti);
    }
    EXPECT_GT(timed, 100u);
  }
  const std::vector<CuptiCounts> c = cupti_counts(counts);
  ASSERT_EQ(c.size(), 4u);
  for (const CuptiCounts& r : c) EXPECT_GE(r.kernels_recorded + 10, r.kernels_run);
  const std::string report = one_line(run_cli({"report", run.dir}));
  EXPECT_NE(report.find("GPU figures from CUPTI (auto: "), std::string::npos) << report;
  EXPECT_NE(report.find("kept on)"), std::string::npos) << report;
}

// Capture by itself under the defaults (a plain LD_PRELOAD: windows, first:50, auto capture
// 20:30m:10): rank 1's GPU turns 4x slower at step kSlowFrom. Every rank sees its step time
// regress; rank 1 (its compute grew, its wait did not) asks at once through the control file, the
// others (they wait for it) defer and then apply its request: one window by itself with the same
// id and steps on every rank, after the slowdown, holding its words. The report's analysis of
// that window names rank 1 and the cause. Steps of 30 ms of fake GPU time, so a busy machine's
// jitter (1-2 ms seen) stays far below what a regression needs (15 %); NVTX step ranges (as
// PyTorch's profiler steps), so the steps are not learned (the learner can mislearn on a busy
// machine: step_learner.h), and the first window is about 50 steps; the slowdown comes 150 steps
// after it: a machine whose load itself shifts by tens of percent within those steps would read as
// the regression (correctly: the job slowed). Nothing is timed.
// A call in flight for more than a second outside every window (the peers of a rank that stalls
// 1.5 s on the host wait in a collective): the in-flight record (always tier) and the call's
// return (detail, kept though no window is open): a call that returned, never a hang.
TEST(Tiers, ACallInFlightForSecondsOutsideWindowsReturnsInTheTrace) {
  JobRun run;
  // A stall at step 600 (6 s in): the steps are known well before it (see the defaults test), so
  // the first window (first:50) ends long before it.
  run_job(run, {"--steps", "800", "--stall-step", "1:600:1500"}, {"NCCLWATCH_AUTO_CAPTURE=off"});
  ASSERT_EQ(run.status, 0) << run.stderr_text;
  JobTrace loaded;
  ASSERT_NO_FATAL_FAILURE(load_four_ranks(run, &loaded));
  int waited = 0;
  for (const RankTrace& t : loaded.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    EXPECT_TRUE(t.never_returned.empty()) << t.never_returned.size() << " calls never returned";
    for (const auto& c : t.calls) {
      EXPECT_EQ(c.flags & ncclwatch::model::kCallNeverReturned, 0) << "call at " << c.enter_ns;
      if (c.exit_ns - c.enter_ns < 1'000'000'000) continue;
      ++waited;
      for (const auto& w : t.windows)
        EXPECT_FALSE(c.enter_ns >= w.start_ns && c.enter_ns < w.end_ns)
            << "the call waited in was inside window " << w.id << ": nothing tested";
    }
  }
  EXPECT_GE(waited, 3) << "ranks 0, 2 and 3 wait for rank 1 in a collective";
  const std::string report = run_cli({"report", run.dir});
  EXPECT_EQ(report.find("never returned"), std::string::npos) << report;
}

// `ncclwatch diff` of two trace directories with capture windows compares what `report --json`
// writes for each (the newest window's analysis and the history), so diffing the directories and
// diffing their report JSONs is one thing; it compared an analysis of every window's detail
// mixed together.
TEST(Tiers, DiffOfWindowedRunsIsTheDiffOfTheirReportJsons) {
  JobRun base, slow;
  const std::vector<std::string> env = {"NCCLWATCH_AUTO_CAPTURE=off",
                                        "NCCLWATCH_CAPTURE=first:50,steps:500-600"};
  run_job(base, {"--steps", "800"}, env);
  run_job(slow, {"--steps", "800", "--slow", "2:1.5"}, env);
  ASSERT_EQ(base.status, 0) << base.stderr_text;
  ASSERT_EQ(slow.status, 0) << slow.stderr_text;
  for (const JobRun* run : {&base, &slow}) {
    const JobTrace loaded = load_with_steps(run->dir);
    ASSERT_FALSE(loaded.ranks.empty());
    EXPECT_EQ(loaded.ranks[0].windows.size(), 2u) << "two windows, or nothing is tested";
  }
  const std::string a = base.dir + "/a.json", b = slow.dir + "/b.json";
  run_cli({"report", base.dir, "--json", a, "--no-progress"});
  run_cli({"report", slow.dir, "--json", b, "--no-progress"});
  const std::string from_dirs = base.dir + "/d1.json", from_reports = base.dir + "/d2.json";
  run_cli({"diff", base.dir, slow.dir, "--json", from_dirs, "--no-progress"});
  run_cli({"diff", a, b, "--json", from_reports, "--no-progress"});
  const auto comparison = [](const std::string& path) {
    std::ifstream in(path);
    nlohmann::json d = nlohmann::json::parse(in, nullptr, false);
    if (d.is_discarded()) return std::string("unreadable ") + path;
    for (const char* side : {"base", "new"}) {  // where each side came from, and its kind
      d[side].erase("source");
      d[side].erase("kind");
    }
    return d.dump(1);
  };
  const std::string d1 = comparison(from_dirs);
  EXPECT_NE(d1.find("\"new\""), std::string::npos) << d1;
  EXPECT_EQ(d1, comparison(from_reports));
}

TEST(Tiers, ASlowdownMidRunCapturesAWindowByItselfOnEveryRank) {
  constexpr int kSlowFrom = 200, kSteps = 330;
  JobRun run;
  const std::string job = "tiers-auto-" + std::to_string(getpid());
  const pid_t pid = start_job(
      run,
      {"--steps", std::to_string(kSteps), "--fwd-us", "9000", "--bwd-us", "18000", "--opt-us",
       "3000", "--nvtx", "--slow-from", "1:" + std::to_string(kSlowFrom) + ":4"},
      {"NCCLWATCH_JOB=" + job});
  wait_job(run, pid);
  ASSERT_EQ(run.status, 0) << run.stderr_text;
  JobTrace loaded;
  ASSERT_NO_FATAL_FAILURE(load_four_ranks(run, &loaded));
  const ncclwatch::model::WindowMark* first_auto = nullptr;
  for (const RankTrace& t : loaded.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    std::string windows;
    const ncclwatch::model::WindowMark* own = nullptr;
    for (const auto& w : t.windows) {
      windows += std::to_string(static_cast<int>(w.trigger)) + " steps " +
                 std::to_string(w.first_step) + "-" + std::to_string(w.end_step) + ": " + w.text +
                 "\n";
      if (w.trigger == format::WindowTrigger::kStepTime ||
          w.trigger == format::WindowTrigger::kWait)
        own = own == nullptr ? &w : own;
    }
    ASSERT_NE(own, nullptr) << "no window by itself; windows:\n" << windows << run.stderr_text;
    EXPECT_EQ(t.windows.size(), 2u) << windows;  // first:50 and this one
    if (first_auto == nullptr) first_auto = own;
    EXPECT_EQ(own->id, first_auto->id) << windows;
    EXPECT_TRUE(own->closed);
    EXPECT_GE(own->first_step, static_cast<uint64_t>(kSlowFrom)) << windows;
    // 20 steps, or more where the window's end was learned late (NVTX ranges come through CUPTI
    // about a second late: the window then ends after the newest record it kept, capture_plan.h).
    EXPECT_GE(own->end_step, own->first_step + 20) << windows;
    EXPECT_LE(own->end_step, own->first_step + 60) << windows;
    EXPECT_NE(own->text.find("step time +"), std::string::npos) << windows;
    // The late rank asked first (the others deferred): its words.
    EXPECT_NE(own->text.find("rank 1: compute +"), std::string::npos) << windows;
    EXPECT_NE(own->text.find("the others wait for it"), std::string::npos) << windows;
    // Its detail: the calls of the other window (first:50) left aside, and the returns of calls
    // in flight for a second (a loaded machine makes them happen anywhere in the run; they are
    // kept outside windows too, in_flight_returns.h).
    EXPECT_TRUE(t.never_returned.empty());
    RankTrace inside = t;
    std::erase_if(inside.calls, [&](const auto& c) {
      if (c.exit_ns - c.enter_ns >= 1'000'000'000) return true;
      for (const auto& w : t.windows)
        if (&w != own && c.enter_ns >= w.start_ns && c.enter_ns < w.end_ns) return true;
      return false;
    });
    expect_window_calls(inside, *own);
  }
  const std::string report = run_cli({"report", run.dir, "--window", "2"});
  EXPECT_NE(report.find("triggered by: step time +"), std::string::npos) << report;
  EXPECT_NE(report.find("rank 1"), std::string::npos) << report;
  EXPECT_NE(report.find("gpu-slow"), std::string::npos) << report;
}

}  // namespace

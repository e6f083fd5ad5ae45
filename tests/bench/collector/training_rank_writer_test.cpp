// The scale benchmark's generated training jobs, as the collector sees them: valid records only,
// every collective matched on every rank, steps that hold their own collectives, and the
// straggler and the stalling rank named by `ncclwatch report` -- so the benchmark measures the
// analyses doing their real work on a job like a real one.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "pipeline/pipeline.h"
#include "trace/job_loader.h"
#include "training_rank_writer.h"
#include "training_timeline.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::bench::TrainingJob;
using ncclwatch::bench::TrainingTimeline;
namespace format = ncclwatch::format;

// 8 ranks on 2 hosts, 60 steps of 4 buckets and 40 kernels: rank 5's GPU is 15% slower, rank 2
// stalls 30 ms on the host before every 10th step.
TrainingJob small_job(const std::string& name) {
  TrainingJob job;
  job.dir = ::testing::TempDir() + "training_" + std::to_string(getpid()) + "_" + name;
  fs::remove_all(job.dir);
  fs::create_directories(job.dir);
  job.ranks = 8;
  job.ranks_per_host = 4;
  job.steps = 60;
  job.buckets = 4;
  job.kernels_per_step = 40;
  job.straggler_rank = 5;
  job.stall_rank = 2;
  job.stall_every = 10;
  return job;
}

struct Written {
  TrainingJob job;
  ncclwatch::bench::TrainingJobFiles files;
  explicit Written(const std::string& name) : job(small_job(name)) {
    files = ncclwatch::bench::write_training_job(TrainingTimeline(job));
  }
  ~Written() { fs::remove_all(job.dir); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(TrainingRankWriter, LoadsWithoutProblemsAndMatchesEveryCollective) {
  Written w("load");
  ASSERT_EQ(w.files.files, 8);
  ncclwatch::model::JobTrace job = ncclwatch::trace::load_job(w.job.dir);
  for (const auto& p : job.problems) ADD_FAILURE() << p.source << ": " << p.message;
  ASSERT_EQ(job.ranks.size(), 8u);
  uint64_t records = 0;
  for (const auto& t : job.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    records += t.info.records;
    EXPECT_TRUE(t.info.complete);
    EXPECT_EQ(t.info.skipped, 0u);
    EXPECT_EQ(t.calls.size(), 1u + 60 * 4);           // the broadcast, then the buckets
    EXPECT_EQ(t.kernels.size(), 1u + 60 * (40 + 4));  // compute and NCCL kernels
    EXPECT_EQ(t.launches.size(), t.kernels.size());   // every kernel launched
    EXPECT_EQ(t.links.size(), t.calls.size());        // every NCCL kernel tied to its call
    EXPECT_EQ(t.ranges.size(), 60u);                  // ProfilerStep#N
    ASSERT_EQ(t.windows.size(), 1u);
    EXPECT_EQ(t.windows[0].trigger, format::WindowTrigger::kWholeRun);
  }
  EXPECT_EQ(records, w.files.records);

  ncclwatch::pipeline::PipelineOptions options;
  options.analyses = false;
  auto result = ncclwatch::pipeline::run_pipeline(job, options);
  EXPECT_EQ(result.match.instances.size(), 1u + 60 * 4);
  EXPECT_TRUE(result.match.incomplete.empty());
  EXPECT_TRUE(result.match.desyncs.empty());
  for (const auto& inst : result.match.instances) EXPECT_EQ(inst.nmembers, 8u);
}

// Each step summary and ProfilerStep range holds exactly its own step's all-reduces, and the
// summary's figures add up to the step.
TEST(TrainingRankWriter, StepsHoldTheirOwnCollectives) {
  Written w("steps");
  ncclwatch::trace::JobLoadOptions options;
  options.keep_steps = true;
  const auto job = ncclwatch::trace::load_job(w.job.dir, options);
  ASSERT_EQ(job.ranks.size(), 8u);
  for (const auto& t : job.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    ASSERT_EQ(t.steps.size(), 60u);
    for (std::size_t s = 0; s < t.steps.size(); ++s) {
      const format::StepRecord& st = t.steps[s];
      EXPECT_EQ(st.step, s);
      EXPECT_EQ(st.prefix.tid, 1 + 4 * s) << "the seq of its first all-reduce";
      const int64_t end = st.start_ns + int64_t{st.duration_us} * 1000;
      uint32_t inside = 0;
      for (const auto& c : t.calls) {
        if (c.enter_ns < st.start_ns || c.enter_ns >= end) continue;
        ++inside;
        EXPECT_GE(c.seq, 1 + 4 * s);
        EXPECT_LT(c.seq, 1 + 4 * (s + 1));
      }
      EXPECT_EQ(inside, st.calls);
      EXPECT_LE(st.compute_us + st.exposed_us + st.idle_us, st.duration_us + 1);
      EXPECT_GE(st.compute_us + st.exposed_us + st.idle_us + 3, st.duration_us);
      EXPECT_GT(st.sync_ns, st.arrive_ns);
      const auto& range = t.ranges[s];
      EXPECT_EQ(t.name_of(range.name), "ProfilerStep#" + std::to_string(s));
      EXPECT_EQ(range.start_ns, st.start_ns);
    }
  }
}

TEST(TrainingRankWriter, IsDeterministicPerSeed) {
  Written a("seed_a"), b("seed_b");
  TrainingJob other = small_job("seed_c");
  other.seed = 2;
  ncclwatch::bench::write_training_job(TrainingTimeline(other));
  std::size_t compared = 0;
  for (const auto& e : fs::directory_iterator(a.job.dir)) {
    const auto name = e.path().filename();
    EXPECT_EQ(slurp(e.path()), slurp(b.job.dir / name)) << name;
    EXPECT_NE(slurp(e.path()), slurp(other.dir / name)) << name;
    ++compared;
  }
  fs::remove_all(other.dir);
  EXPECT_EQ(compared, 8u);
}

// `ncclwatch report` as a user runs it: the slow GPU is a persistent straggler, the stalling
// rank a periodic one, and nobody else is named.
TEST(TrainingRankWriter, TheReportNamesTheStragglerAndTheStall) {
  Written w("report");
  const std::string json_path = w.job.dir + "/report.json";
  const std::string command = std::string(NCCLWATCH_CLI) + " report '" + w.job.dir +
                              "' --no-progress --json '" + json_path + "' > /dev/null 2>&1";
  // Exit status 3: a report with findings at warning level (the straggler's).
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << command;
  ASSERT_EQ(WEXITSTATUS(status), 3) << command;
  const auto report = nlohmann::json::parse(slurp(json_path));
  EXPECT_TRUE(report["problems"].empty()) << report["problems"].dump();
  std::map<int, std::string> named;
  for (const auto& s : report["stragglers"]) named[s["rank"].get<int>()] = s["pattern"];
  EXPECT_EQ(named, (std::map<int, std::string>{{2, "periodic"}, {5, "persistent"}}))
      << report["stragglers"].dump();
  for (const auto& s : report["stragglers"]) {
    if (s["rank"] == 5) {
      EXPECT_EQ(s["cause"], "gpu-slow");
    }
    if (s["rank"] == 2) {
      EXPECT_EQ(s["period_steps"], 10);
    }
  }
}

}  // namespace

// Four ranks of fake_train (fake libcudart + libcupti + libnccl) under LD_PRELOAD of the real
// libncclwatch.so, started by fake_launcher like torchrun; the trace files are read back with
// the collector's reader and linked with collector/timeline.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "process.h"
#include "timeline/gpu_linker.h"
#include "trace/rank_loader.h"

namespace {

using ncclwatch::format::Func;
using ncclwatch::model::RankTrace;

struct JobRun {
  int status = -1;
  std::vector<RankTrace> ranks;
  std::vector<std::string> warnings;
};

JobRun run_job(const std::string& program, const std::vector<std::string>& args,
               const std::vector<std::string>& env) {
  static int counter = 0;
  std::string dir = ::testing::TempDir() + "gpu_ranks_" + std::to_string(getpid()) + "_" +
                    std::to_string(counter++);
  std::string mk = "mkdir -p " + dir;
  EXPECT_EQ(std::system(mk.c_str()), 0);
  std::vector<std::string> argv = {FAKE_LAUNCHER, "--nproc", "4", "--env",
                                   std::string("LD_PRELOAD=") + SHIM_LIB, "--env",
                                   "NCCLWATCH_DIR=" + dir, "--env", "NCCLWATCH_JOB=gputest",
                                   // The warnings counted below are the GPU timeline's; the
                                   // line saying where the traces went is not one of them.
                                   "--env", "NCCLWATCH_EXIT_LINE=off"};
  for (const auto& e : env) {
    argv.push_back("--env");
    argv.push_back(e);
  }
  argv.push_back("--");
  argv.push_back(program);
  for (const auto& a : args) argv.push_back(a);
  std::string err = dir + "/stderr.txt";
  const pid_t pid = ncclwatch::test_support::start_process(argv, err);
  JobRun run;
  waitpid(pid, &run.status, 0);
  std::ifstream ef(err);
  for (std::string line; std::getline(ef, line);) {
    if (line.rfind("ncclwatch:", 0) == 0) run.warnings.push_back(line);
  }
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 6 && name.substr(name.size() - 6) == ".trace") {
        std::vector<ncclwatch::model::InputProblem> problems;
        run.ranks.push_back(ncclwatch::trace::load_rank(dir + "/" + name, problems, true));
        for (const auto& p : problems) ADD_FAILURE() << p.source << ": " << p.message;
        ncclwatch::timeline::link_calls_to_gpu(run.ranks.back());
      }
    }
    closedir(d);
  }
  std::string rm = "rm -rf " + dir;
  EXPECT_EQ(std::system(rm.c_str()), 0);
  return run;
}

bool is_comm_call(Func f) {
  return ncclwatch::format::is_collective(f) || ncclwatch::format::is_p2p(f);
}

int count_named(const RankTrace& t, const std::string& name) {
  int n = 0;
  for (const auto& k : t.kernels) n += t.name_of(k.name) == name;
  return n;
}

// Every collective of every rank has its NCCL kernel; the kernel of one collective ends at the
// same time on every rank (the fake NCCL's end = last arrival + transfer).
void expect_every_call_has_its_kernel(const JobRun& run, int collectives_per_rank) {
  ASSERT_EQ(run.ranks.size(), 4u);
  std::map<std::pair<uint64_t, uint64_t>, std::vector<int64_t>> ends;
  for (const auto& t : run.ranks) {
    int calls = 0;
    for (const auto& c : t.calls) {
      if (!is_comm_call(c.func)) continue;
      ++calls;
      ASSERT_GE(c.kernel, 0) << "rank " << t.info.rank << " seq " << c.seq;
      const auto& k = t.kernels[static_cast<size_t>(c.kernel)];
      EXPECT_TRUE(k.nccl);
      EXPECT_GE(k.start_ns, c.enter_ns);  // a kernel never starts before its call
      EXPECT_EQ(c.gpu_end_ns, k.end_ns);
      ends[{c.comm_id, c.seq}].push_back(k.end_ns);
    }
    EXPECT_EQ(calls, collectives_per_rank);
  }
  for (const auto& [key, v] : ends) {
    ASSERT_EQ(v.size(), 4u);
    for (int64_t e : v) EXPECT_NEAR(static_cast<double>(e), static_cast<double>(v[0]), 1e3);
  }
}

TEST(GpuRanks, FullModeFourRanksOverlapAsModelled) {
  JobRun run = run_job(FAKE_TRAIN, {"--steps", "3", "--nvtx"}, {});
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.warnings.size(), 4u);  // one line per rank
  for (const auto& w : run.warnings) EXPECT_NE(w.find("full"), std::string::npos) << w;
  expect_every_call_has_its_kernel(run, 1 + 3 * 4);
  for (const auto& t : run.ranks) {
    EXPECT_EQ(t.info.timing, ncclwatch::model::TimingSource::kCupti);
    EXPECT_EQ(count_named(t, "fwd_kernel"), 24);
    EXPECT_EQ(count_named(t, "bwd_kernel"), 24);
    EXPECT_EQ(count_named(t, "optimizer_kernel"), 3);
    EXPECT_EQ(t.ranges.size(), 3u);
    // Overlap: the first bucket's all-reduce runs while later backward kernels do.
    int overlapping = 0;
    for (const auto& c : t.calls) {
      if (c.func != Func::kAllReduce) continue;
      for (const auto& k : t.kernels) {
        if (t.name_of(k.name) == "bwd_kernel" && k.start_ns < c.gpu_end_ns &&
            k.end_ns > c.gpu_start_ns) {
          ++overlapping;
          break;
        }
      }
    }
    EXPECT_GE(overlapping, 3) << "rank " << t.info.rank;
    EXPECT_FALSE(t.launches.empty());
  }
}

// Every rank summarizes its steps (format.h, StepRecord) from what its drain thread sees: the
// step is learned from the collective sequence (4 equal buckets per step: the gaps decide), every
// rank numbers the same steps the same way (joined by the seq of their first bucket), and the
// GPU figures are the modelled ones: 10 ms of compute per step (15 ms on the slow rank).
TEST(GpuRanks, StepSummariesOfAFakeDdpJob) {
  JobRun run = run_job(FAKE_TRAIN, {"--steps", "40", "--slow", "2:1.5"}, {});
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.ranks.size(), 4u);
  std::map<uint32_t, std::vector<uint32_t>> seq_of_step;
  for (const auto& t : run.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.info.rank));
    const uint32_t compute = t.info.rank == 2 ? 15'000 : 10'000;
    double compute_sum = 0;
    int compute_steps = 0;
    ASSERT_GE(t.steps.size(), 39u);
    ASSERT_LE(t.steps.size(), 40u);
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
      const auto& st = t.steps[i];
      seq_of_step[st.step].push_back(st.prefix.tid);
      EXPECT_EQ(st.prefix.u8a, static_cast<uint8_t>(ncclwatch::format::StepSource::kCollectives));
      EXPECT_EQ(st.prefix.u8b, static_cast<uint8_t>(ncclwatch::format::StepTiming::kCupti));
      if (i > 0) {
        EXPECT_EQ(st.step, t.steps[i - 1].step + 1);
      }
      EXPECT_EQ(st.calls, 4u);
      EXPECT_EQ(st.bytes, 4u * 25 * 1024 * 1024);
      EXPECT_GT(st.arrive_ns, 0);
      EXPECT_GT(st.sync_ns, st.arrive_ns);
      if ((st.prefix.flags & ncclwatch::format::kStepLast) != 0) continue;
      EXPECT_LE(st.compute_us + st.exposed_us + st.idle_us, st.duration_us + 1);
      if (i == 0) continue;  // the first step holds the broadcast's and warm-up's edge
      // Steps start at the host's entry into their first bucket, after it has launched the
      // forward pass and the first bucket's backward kernels; the fake GPU runs them when it gets
      // to them. On a busy machine the host is late by a varying amount, so a varying part of the
      // next step's pre-bucket kernels (seen: 370 us, and 2.7 ms of 10 ms on a loaded CI) run
      // before its start and count in this step, and the next step counts that much less. A
      // step's own compute is therefore not a load-independent figure; what is: no kernel time is
      // lost or counted twice, so the running sum from step 1 stays within one step's pre-bucket
      // compute (forward 3 ms + a quarter of backward's 6 ms: 45 % of a step's) of the modelled
      // figure, whatever the load.
      compute_sum += st.compute_us;
      ++compute_steps;
      const double modelled = compute_steps * compute;
      EXPECT_NEAR(compute_sum, modelled, compute / 2) << "steps 1.." << i;
      EXPECT_LE(st.compute_us, 2 * compute) << "step " << st.step;
    }
    ASSERT_GT(compute_steps, 30);
  }
  for (const auto& [step, seqs] : seq_of_step) {
    if (seqs.size() < 4) continue;  // the last step may end differently
    for (uint32_t seq : seqs) EXPECT_EQ(seq, seqs[0]) << "step " << step;
  }
}

TEST(GpuRanks, NoOverlapMeansNoBackwardDuringAllReduce) {
  JobRun run = run_job(FAKE_TRAIN, {"--steps", "2", "--no-overlap"}, {});
  ASSERT_EQ(run.status, 0);
  expect_every_call_has_its_kernel(run, 1 + 2 * 4);
  for (const auto& t : run.ranks) {
    for (const auto& c : t.calls) {
      if (c.func != Func::kAllReduce) continue;
      for (const auto& k : t.kernels) {
        if (t.name_of(k.name) == "bwd_kernel") {
          // 1 us: CUPTI's interpolation onto the host clock jitters by nanoseconds.
          EXPECT_FALSE(k.start_ns + 1000 < c.gpu_end_ns && k.end_ns > c.gpu_start_ns + 1000)
              << "rank " << t.info.rank << " seq " << c.seq << " call gpu [" << c.gpu_start_ns
              << ", " << c.gpu_end_ns << "] enter " << c.enter_ns << " bwd [" << k.start_ns << ", "
              << k.end_ns << "]";
        }
      }
    }
  }
}

TEST(GpuRanks, NonBlockingCommCorrelates) {
  JobRun run = run_job(FAKE_TRAIN, {"--steps", "2", "--nonblocking"}, {});
  ASSERT_EQ(run.status, 0);
  expect_every_call_has_its_kernel(run, 1 + 2 * 4);
}

TEST(GpuRanks, LiteModeTimesEveryCollective) {
  JobRun run = run_job(FAKE_TRAIN, {"--steps", "3"}, {"NCCLWATCH_MODE=lite"});
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.ranks.size(), 4u);
  ASSERT_EQ(run.warnings.size(), 4u);
  std::map<std::pair<uint64_t, uint64_t>, std::vector<int64_t>> ends, enters;
  for (const auto& t : run.ranks) {
    EXPECT_EQ(t.info.timing, ncclwatch::model::TimingSource::kEvents);
    EXPECT_TRUE(t.kernels.empty());
    for (const auto& c : t.calls) {
      if (!is_comm_call(c.func)) continue;
      ASSERT_TRUE(c.has_gpu()) << "rank " << t.info.rank << " seq " << c.seq;
      EXPECT_LE(c.gpu_start_ns, c.gpu_end_ns);
      ends[{c.comm_id, c.seq}].push_back(c.gpu_end_ns);
      enters[{c.comm_id, c.seq}].push_back(c.enter_ns);
    }
  }
  // A collective cannot end on any GPU before the last rank called it: the events bracket the
  // real kernel, whose end is last arrival + transfer (the same on every rank). Exact equality
  // across ranks is not asserted: the end event also waits for the recording host thread.
  for (const auto& [key, v] : ends) {
    ASSERT_EQ(v.size(), 4u);
    int64_t last_enter = *std::max_element(enters[key].begin(), enters[key].end());
    for (int64_t e : v) EXPECT_GT(e, last_enter);
  }
}

// Losses are counted where they happen and reach the trace header: the driver refuses timing
// events after a while (lite mode loses GPU times), and NCCLWATCH_KERNELS=nccl leaves compute
// kernels out. The counts must equal what is missing from the traces, not just be non-zero.
TEST(GpuRanks, LiteModeCountsTheCallsItCouldNotTime) {
  // 16 timing-event records per process: up to 8 anchor the clock, the rest time a few calls.
  JobRun run = run_job(FAKE_TRAIN, {"--steps", "8"},
                       {"NCCLWATCH_MODE=lite", "NCCLWATCH_FAKE_TIMING_RECORDS=16"});
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.ranks.size(), 4u);
  for (const auto& t : run.ranks) {
    EXPECT_EQ(t.info.timing, ncclwatch::model::TimingSource::kEvents);
    uint64_t timed = 0, untimed = 0;
    for (const auto& c : t.calls) {
      if (!is_comm_call(c.func)) continue;
      (c.has_gpu() ? timed : untimed) += 1;
    }
    EXPECT_GT(timed, 0u) << "rank " << t.info.rank;
    EXPECT_GT(untimed, 0u) << "rank " << t.info.rank;
    EXPECT_EQ(t.info.losses.counts.lite_untimed, untimed) << "rank " << t.info.rank;
    EXPECT_EQ(t.info.losses.lost(), untimed);  // nothing else was lost
    EXPECT_EQ(t.info.losses.ring_full, 0u);
  }
}

TEST(GpuRanks, KernelFilterCountsWhatItLeftOut) {
  JobRun all = run_job(FAKE_TRAIN, {"--steps", "2"}, {});
  JobRun nccl_only = run_job(FAKE_TRAIN, {"--steps", "2"}, {"NCCLWATCH_KERNELS=nccl"});
  ASSERT_EQ(all.status, 0);
  ASSERT_EQ(nccl_only.status, 0);
  ASSERT_EQ(all.ranks.size(), 4u);
  ASSERT_EQ(nccl_only.ranks.size(), 4u);
  std::map<int32_t, uint64_t> compute;  // by rank, in the unfiltered run
  for (const auto& t : all.ranks) {
    EXPECT_EQ(t.info.losses.counts.kernels_filtered, 0u);
    for (const auto& k : t.kernels) compute[t.info.rank] += !k.nccl;
  }
  for (const auto& t : nccl_only.ranks) {
    for (const auto& k : t.kernels) EXPECT_TRUE(k.nccl);
    EXPECT_GT(compute[t.info.rank], 0u);
    EXPECT_EQ(t.info.losses.counts.kernels_filtered, compute[t.info.rank]) << t.info.rank;
  }
  // The trace header says which filter left them out (the report judges by it).
  for (const auto& t : all.ranks) EXPECT_EQ(t.info.kernels, ncclwatch::model::KernelScope::kAll);
  for (const auto& t : nccl_only.ranks)
    EXPECT_EQ(t.info.kernels, ncclwatch::model::KernelScope::kNcclOnly) << t.info.rank;
  JobRun sampled = run_job(FAKE_TRAIN, {"--steps", "2"}, {"NCCLWATCH_KERNELS=sampled:7"});
  ASSERT_EQ(sampled.status, 0);
  ASSERT_EQ(sampled.ranks.size(), 4u);
  for (const auto& t : sampled.ranks) {
    EXPECT_EQ(t.info.kernels, ncclwatch::model::KernelScope::kSampled) << t.info.rank;
    EXPECT_EQ(t.info.kernel_sample_every, 7u) << t.info.rank;
  }
}

TEST(GpuRanks, BusyCuptiFallsBackToLiteWithOneWarningPerRank) {
  JobRun run = run_job(FAKE_TRAIN, {"--steps", "2"}, {"NCCLWATCH_FAKE_CUPTI_BUSY=1"});
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.warnings.size(), 4u);
  for (const auto& w : run.warnings) EXPECT_NE(w.find("busy"), std::string::npos) << w;
  for (const auto& t : run.ranks) {
    EXPECT_EQ(t.info.timing, ncclwatch::model::TimingSource::kEvents);
    for (const auto& c : t.calls) {
      if (is_comm_call(c.func)) {
        EXPECT_TRUE(c.has_gpu());
      }
    }
  }
}

TEST(GpuRanks, NoCudaGivesHostOnlyRecordsAndOneWarningPerRank) {
  JobRun run = run_job(FAKE_RANK, {"--steps", "2"}, {});
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.ranks.size(), 4u);
  ASSERT_EQ(run.warnings.size(), 4u);
  for (const auto& w : run.warnings) EXPECT_NE(w.find("no CUDA"), std::string::npos) << w;
  for (const auto& t : run.ranks) {
    EXPECT_EQ(t.info.timing, ncclwatch::model::TimingSource::kHostOnly);
    EXPECT_TRUE(t.kernels.empty());
    int calls = 0;
    for (const auto& c : t.calls) calls += is_comm_call(c.func);
    EXPECT_EQ(calls, 4);
  }
}

}  // namespace

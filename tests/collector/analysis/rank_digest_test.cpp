// Ranks whose GPU records were dropped once digested (analysis/rank_digest.h) give the analysis
// of whole ranks, byte for byte: on every kind of the verdict matrix, at every noise, GPU-timed
// and host-only, with ranks read again where StepDetector::agree() gave them the job's steps;
// and a rank that cannot be read again says so instead of counting nothing silently.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "analysis/analyze.h"
#include "analysis/rank_digest.h"
#include "scenario_matrix.h"

namespace ncclwatch::analysis {
namespace {

using testing::Kind;
using testing::Noise;

// `job` with every rank digested and dropped; a read again returns the rank as it was (counted),
// or fails when `fail_reads`.
model::JobTrace digested(const model::JobTrace& job, std::atomic<int>& reads,
                         bool fail_reads = false) {
  model::JobTrace out = job;
  for (std::size_t i = 0; i < out.ranks.size(); ++i) {
    digest_and_drop(out.ranks[i],
                    [&reads, whole = job.ranks[i],
                     fail_reads](std::string& why) -> std::optional<model::RankTrace> {
                      ++reads;
                      if (fail_reads) {
                        why = "its trace went away";
                        return std::nullopt;
                      }
                      return whole;
                    });
  }
  return out;
}

// A slow GPU and a rank stalling before every 2nd step by 10 times the slow one's lateness: the
// staller's own call gaps show a step of 8 calls, every other rank's 4; agree() gives it the
// job's 4, and its kernels per step must be counted again under those.
testing::SimJob stall_beside_slow_gpu() {
  auto p = testing::sim_params(16, 4);
  p.steps = 31;
  p.jitter_ns = 20'000;
  const double amount = 1.45;
  p.ranks[5].compute_scale = amount;
  const auto lateness = static_cast<int64_t>(
      static_cast<double>(p.forward_ns + p.buckets * p.segment_ns) * (amount - 1.0));
  p.ranks[14].spike_every = 2;
  p.ranks[14].spike_ns = 10 * lateness;
  return testing::simulate(p);
}

TEST(RankDigest, RanksGivenTheJobsStepsAreReadAgainAndGiveTheSameReport) {
  const testing::SimJob sim = stall_beside_slow_gpu();
  model::Report whole, lean;
  analyze(sim.job, sim.match, sim.clocks, whole);
  std::atomic<int> reads{0};
  const model::JobTrace job = digested(sim.job, reads);
  analyze(job, sim.match, sim.clocks, lean);
  EXPECT_EQ(reads.load(), 1);
  EXPECT_EQ(testing::everything(whole), testing::everything(lean));
}

TEST(RankDigest, DigestedRanksGiveTheSameReportOnTheVerdictMatrix) {
  std::atomic<int> reads{0};
  int jobs = 0;
  for (Kind kind : testing::kAllKinds) {
    for (Noise noise : {Noise::kNone, Noise::kJitter, Noise::kGc, Noise::kContention}) {
      for (bool host_only : {false, true}) {
        const testing::SimJob sim = testing::matrix_job(kind, noise, host_only, 1);
        model::Report whole, lean;
        analyze(sim.job, sim.match, sim.clocks, whole);
        const model::JobTrace job = digested(sim.job, reads);
        for (const model::RankTrace& r : job.ranks) ASSERT_TRUE(r.kernels.empty());
        analyze(job, sim.match, sim.clocks, lean, 2);
        EXPECT_EQ(testing::everything(whole), testing::everything(lean))
            << testing::to_string(kind) << " " << testing::to_string(noise)
            << (host_only ? " host-only" : " GPU");
        ++jobs;
      }
    }
  }
  EXPECT_EQ(jobs, 64);
}

TEST(RankDigest, ARankThatCannotBeReadAgainSaysSoAndCountsNoKernels) {
  const testing::SimJob sim = stall_beside_slow_gpu();
  std::atomic<int> reads{0};
  const model::JobTrace job = digested(sim.job, reads, true);
  model::Report report;
  analyze(job, sim.match, sim.clocks, report);
  ASSERT_GT(reads.load(), 0);
  int said = 0;
  for (const model::Finding& f : report.findings)
    said += f.text.find(
                "its trace went away; its compute kernels per step and its kernel "
                "table are left out") != std::string::npos;
  EXPECT_EQ(said, reads.load());
  // Those ranks are left out of the kernel table.
  EXPECT_EQ(report.json["kernels_analysis"]["ranks"].get<std::size_t>(),
            job.ranks.size() - static_cast<std::size_t>(reads.load()));
}

TEST(RankDigest, DroppedRecordsKeepCommKernelCountsAndLaunchesThatNeverRan) {
  model::RankTrace r;
  model::KernelEvent nccl;
  nccl.nccl = true;
  nccl.family = model::CommFamily::kNccl;
  nccl.correlation = 7;
  model::KernelEvent compute;
  compute.correlation = 8;
  r.kernels = {nccl, compute, nccl};
  format::KernelLinkRecord ran{}, never{}, never_again{};
  ran.comm_id = 0x42;
  ran.seq = 1;
  ran.correlation = 7;
  never.comm_id = 0x42;
  never.seq = 2;
  never.correlation = 9;
  never_again = never;
  never_again.correlation = 10;  // a second launch of that call: one entry
  r.links = {ran, never, never_again};
  const model::DroppedGpuRecords d = dropped_records_of(r);
  EXPECT_EQ(d.kernels, 3u);
  EXPECT_EQ(d.comm_kernels[static_cast<std::size_t>(model::CommFamily::kNccl)], 2u);
  ASSERT_EQ(d.launched_without_kernel.size(), 1u);
  EXPECT_TRUE(d.launched_without_kernel_at(0x42, 2));
  EXPECT_FALSE(d.launched_without_kernel_at(0x42, 1));
}

}  // namespace
}  // namespace ncclwatch::analysis

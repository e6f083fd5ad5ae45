// `ncclwatch diff` on simulated pairs of runs (ddp_sim): the same noisy job twice (nothing may
// be flagged), and the job with one injected cause — a slow fabric, a slow GPU, a data-loader
// stall, faster compute under a stall (the bf16 case). Each pair: the verdict's first line names
// the injected cause, and every flagged figure is one the cause explains.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "diff/diff_render.h"
#include "diff/run_comparison.h"
#include "sim_reports.h"

namespace ncclwatch::diff {
namespace {

using testing::noisy_job;
using testing::sim_report;

DiffResult diff_of(const analysis::testing::SimParams& base,
                   const analysis::testing::SimParams& now) {
  return compare_reports(sim_report(base), sim_report(now));
}

std::string dump(const DiffResult& r) {
  return render_text(r, {"base", "sim", "new", "sim"});
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// Every flagged key starts with one of `allowed` (prefixes).
void expect_only(const DiffResult& r, const std::vector<std::string>& allowed) {
  for (const std::string& key : r.flagged_keys()) {
    const bool ok = std::any_of(allowed.begin(), allowed.end(),
                                [&](const std::string& a) { return key.rfind(a, 0) == 0; });
    EXPECT_TRUE(ok) << "flagged beyond the injected cause: " << key << "\n" << dump(r);
  }
}

bool flagged(const DiffResult& r, const std::string& prefix) {
  for (const std::string& key : r.flagged_keys()) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

TEST(DiffSim, TheSameJobTwiceFlagsNothing) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    for (auto noise : {analysis::testing::Noise::kJitter, analysis::testing::Noise::kGc,
                       analysis::testing::Noise::kContention}) {
      auto a = noisy_job(seed, 0.1), b = noisy_job(seed + 100, 0.1);
      a.noise = b.noise = noise;
      const DiffResult r = diff_of(a, b);
      EXPECT_TRUE(r.flagged_keys().empty())
          << "seed " << seed << " noise " << to_string(noise) << "\n"
          << dump(r);
      EXPECT_EQ(r.verdict.rfind("no significant change: step time", 0), 0u) << r.verdict;
      EXPECT_FALSE(r.regression);
    }
  }
}

TEST(DiffSim, SlowLinkAtOneNode) {
  // Pair links over 4 hosts (each node in two cross-node communicators): node-c's NIC makes its
  // communicators' transfers 3x slower in NEW.
  auto job = [](uint64_t seed) {
    auto p = noisy_job(seed);
    p.ranks = analysis::testing::sim_params(8, 2).ranks;
    p.pair_links = true;
    return p;
  };
  auto base = job(11), now = job(12);
  now.slow_link_host = 2;
  now.link_slowdown = 3;
  const DiffResult r = diff_of(base, now);
  EXPECT_TRUE(r.regression) << dump(r);
  EXPECT_TRUE(contains(r.verdict.substr(0, r.verdict.find(';')), "slow link at node-c in NEW only"))
      << r.verdict;
  expect_only(r, {"step", "exposed_", "busbw:", "bucket_", "slow link:node-c", "pattern"});
}

TEST(DiffSim, SlowFabric) {
  // The all-reduce transfer takes 3x as long: exposed transfer grows, bus bandwidth drops.
  auto base = noisy_job(1), now = noisy_job(2);
  now.transfer_ns = 3 * base.transfer_ns;
  const DiffResult r = diff_of(base, now);
  EXPECT_TRUE(r.regression) << dump(r);
  EXPECT_EQ(r.verdict.rfind("step time +", 0), 0u) << r.verdict;
  const std::string first = r.verdict.substr(0, r.verdict.find(';'));
  EXPECT_TRUE(contains(first, "exposed communication +")) << r.verdict;
  EXPECT_TRUE(contains(first, "all-reduce busbw")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "compute unchanged")) << r.verdict;
  EXPECT_TRUE(flagged(r, "busbw:all_reduce")) << dump(r);
  expect_only(r, {"step", "exposed_transfer", "exposed_wait", "busbw:", "bucket_", "pattern"});
}

TEST(DiffSim, SlowGpuOnOneRank) {
  auto base = noisy_job(3), now = noisy_job(4);
  now.ranks[5].compute_scale = 1.3;
  const DiffResult r = diff_of(base, now);
  EXPECT_TRUE(r.regression) << dump(r);
  EXPECT_TRUE(contains(r.verdict, "rank 5 (node-b) late in NEW only: slow GPU")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "rank 5 (node-b)") &&
              r.verdict.find("rank 5") < r.verdict.find(';'))
      << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "compute +")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "(only on rank 5 (node-b): 14.1 ms → 18.3 ms/step)"))
      << r.verdict;
  // Its peers wait for it (and their transfers start later, under compute): consequences.
  expect_only(r,
              {"step", "exposed_", "compute", "kernel:", "straggler:rank 5", "bucket_", "pattern"});
}

TEST(DiffSim, DataLoaderStall) {
  auto base = noisy_job(5), now = noisy_job(6);
  for (auto& rank : now.ranks) rank.host_stall_ns = 5'000'000;
  const DiffResult r = diff_of(base, now);
  EXPECT_TRUE(r.regression) << dump(r);
  const std::string first = r.verdict.substr(0, r.verdict.find(';'));
  EXPECT_TRUE(contains(first, "GPU idle at the step boundary +5.0 ms/step")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "pattern healthy → dataloader")) << r.verdict;
  expect_only(r, {"step", "idle_step_boundary", "pattern", "exposed_wait"});
}

TEST(DiffSim, HostOnlyRunsCompareTheHostSideSplit) {
  // NCCLWATCH_MODE=host: no kernels, the step splits into time inside and between NCCL calls.
  auto base = noisy_job(9), now = noisy_job(10);
  base.host_only = now.host_only = true;
  now.ranks[3].compute_scale = 1.3;
  const DiffResult r = diff_of(base, now);
  EXPECT_EQ(r.base.basis, "host");
  EXPECT_TRUE(r.regression) << dump(r);
  EXPECT_TRUE(contains(r.verdict, "rank 3 (node-a) late in NEW only")) << r.verdict;
  // The simulator's calls return at once (asynchronous NCCL): the host waits between them.
  EXPECT_TRUE(contains(r.verdict, "step time +")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, ": time between NCCL calls +")) << r.verdict;
  EXPECT_TRUE(r.busbw.empty());  // no GPU timing: no bandwidth
  expect_only(r, {"step", "host_", "straggler:rank 3", "pattern"});
  // The same host-only job twice: nothing.
  EXPECT_TRUE(diff_of(base,
                      [] {
                        auto p = noisy_job(11);
                        p.host_only = true;
                        return p;
                      }())
                  .flagged_keys()
                  .empty());
}

TEST(DiffSim, FasterComputeMakesTheStallWeighMore) {
  // bf16: compute halves, the 5 ms data-loader stall stays: its share of the step grows.
  auto base = noisy_job(7), now = noisy_job(8);
  for (auto* p : {&base, &now}) {
    for (auto& rank : p->ranks) rank.host_stall_ns = 5'000'000;
  }
  now.forward_ns /= 2;
  now.segment_ns /= 2;
  now.optimizer_ns /= 2;
  // The same host jitter in ms (the simulator scales it with the nominal step).
  now.noise_frac = base.noise_frac * static_cast<double>(base.nominal_step_ns()) /
                   static_cast<double>(now.nominal_step_ns());
  const DiffResult r = diff_of(base, now);
  EXPECT_FALSE(r.regression) << dump(r);
  EXPECT_EQ(r.verdict.rfind("step time -", 0), 0u) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, ": compute -")) << r.verdict;
  // 5 ms of stall plus the host jitter, about 26 % of the step before and 38 % after.
  EXPECT_TRUE(contains(r.verdict, "; idle at the step boundary did not change (5.")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "ms/step) but is now 3")) << r.verdict;
  expect_only(r, {"step", "compute", "kernel:", "bucket_", "exposed_"});
}

}  // namespace
}  // namespace ncclwatch::diff

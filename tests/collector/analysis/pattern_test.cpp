// Known answers for the pattern verdict, one per row of the table, plus a healthy run with no
// warning, on the DDP simulator; flat-low and the cross-node tensor-parallel check on
// hand-built timelines (the simulator has neither tiny kernels nor a second communicator).
#include <gtest/gtest.h>

#include <functional>

#include "analysis/analyze.h"
#include "analysis/cross_node_comm.h"
#include "analysis/pattern_report.h"
#include "analysis/rank_activity.h"
#include "analysis/step_breakdown.h"
#include "analysis/step_plan.h"
#include "analysis/utilization_pattern.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

model::Report run(const testing::SimParams& p) {
  const auto s = testing::simulate(p);
  model::Report r;
  analyze(s.job, s.match, s.clocks, r);
  return r;
}

const model::Finding* pattern_finding(const model::Report& r) {
  for (const auto& f : r.findings) {
    if (f.source == "pattern") return &f;
  }
  return nullptr;
}

std::string row(const model::Report& r) {
  return r.json.at("pattern").at("row").get<std::string>();
}

TEST(Pattern, HealthyRunGetsNoWarning) {
  // Useful compute 14 of 15.5 ms = 90%; exposed comm 1 ms = 6.5%.
  const model::Report r = run(testing::sim_params(4, 2));
  EXPECT_EQ(row(r), "healthy") << r.json["pattern"].dump();
  const model::Finding* f = pattern_finding(r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, model::Severity::kInfo);
  EXPECT_EQ(f->text.rfind("no low-utilization pattern: useful compute 90%", 0), 0u) << f->text;
  for (const auto& x : r.findings) {
    if (x.source == "pattern") {
      EXPECT_EQ(x.severity, model::Severity::kInfo) << x.text;
    }
  }
}

TEST(Pattern, DataLoaderSawtooth) {
  // Every rank stalls 5 ms before each step: 5 of 20.5 ms idle at the boundary (24%).
  auto p = testing::sim_params(4, 2);
  for (auto& s : p.ranks) s.host_stall_ns = 5'000'000;
  p.jitter_ns = 20'000;
  const model::Report r = run(p);
  EXPECT_EQ(row(r), "dataloader") << r.json["pattern"].dump();
  const model::Finding* f = pattern_finding(r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, model::Severity::kWarning);
  EXPECT_EQ(
      f->text.rfind("sawtooth: GPU idle 24% of each step at the step boundary on every rank", 0),
      0u)
      << f->text;
  EXPECT_NE(f->text.find("DataLoader num_workers"), std::string::npos);
  EXPECT_NE(f->text.find("useful compute 68%"), std::string::npos) << f->text;  // 14 / 20.5
  EXPECT_TRUE(r.json["stragglers"].empty());
}

TEST(Pattern, SawtoothWithASlightlyLaterRankIsStillTheSawtooth) {
  // Every rank loads data for 5 ms, rank 1 for 6 ms: rank 1 straggles by 1 ms, small next to
  // the 5 ms stall every rank has — the verdict stays the sawtooth and names rank 1 on the side.
  auto p = testing::sim_params(4, 2);
  for (auto& s : p.ranks) s.host_stall_ns = 5'000'000;
  p.ranks[1].host_stall_ns = 6'000'000;
  const model::Report r = run(p);
  ASSERT_FALSE(r.json["stragglers"].empty());
  EXPECT_EQ(r.json["stragglers"][0]["rank"], 1);
  EXPECT_EQ(row(r), "dataloader") << r.json["pattern"].dump();
  // In the straggler finding's own words and figures, named smaller than the stall.
  EXPECT_NE(pattern_finding(r)->text.find(
                "Also, smaller than this stall: rank 1 (node-a) is 1.0 ms late at the first "
                "all-reduce, costing"),
            std::string::npos)
      << pattern_finding(r)->text;
}

TEST(Pattern, DataLoaderSawtoothWithStepRanges) {
  auto p = testing::sim_params(2, 1);
  for (auto& s : p.ranks) s.host_stall_ns = 5'000'000;
  p.step_ranges = true;
  EXPECT_EQ(row(run(p)), "dataloader");
}

TEST(Pattern, CheckpointEveryFourSteps) {
  // Every rank writes a 30 ms checkpoint before steps 4, 8, 12.
  auto p = testing::sim_params(4, 2);
  p.steps = 13;
  for (auto& s : p.ranks) {
    s.spike_ns = 30'000'000;
    s.spike_every = 4;
  }
  const model::Report r = run(p);
  EXPECT_EQ(row(r), "checkpoint") << r.json["pattern"].dump();
  EXPECT_EQ(r.json["pattern"]["spike_steps"], nlohmann::json({4, 8, 12}));
  EXPECT_EQ(r.json["pattern"]["period_steps"], 4);
  const model::Finding* f = pattern_finding(r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->text.rfind("sawtooth aligned with save intervals: steps 4, 8, 12 (every 4 steps) "
                          "stall 30.0 ms at the step boundary on every rank",
                          0),
            0u)
      << f->text;
}

TEST(Pattern, CheckpointSeenThroughAnOddHiccup) {
  // Saves before steps 4, 8, 12 and one machine-wide 30 ms hiccup before step 6: the hiccup is
  // off the progression and left out.
  auto p = testing::sim_params(4, 2);
  p.steps = 13;
  for (auto& s : p.ranks) {
    s.spike_ns = 30'000'000;
    s.spike_every = 4;
    s.extra_spike_step = 5;
  }
  const model::Report r = run(p);
  EXPECT_EQ(row(r), "checkpoint") << r.json["pattern"].dump();
  EXPECT_EQ(r.json["pattern"]["spike_steps"], nlohmann::json({4, 8, 12}));
  EXPECT_EQ(r.json["pattern"]["period_steps"], 4);
}

// Three sightings are the least a checkpoint is called on, so they must look like saves: the
// same size each time (a save writes the same state; jitter comes in any size), and none of them
// the first steady step (it carries what warm-up left). A real H200 run of 70 launch-bound steps
// idled longer at steps 2, 33 and 64 by 0.95, 1.42 and 0.35 ms and was called a checkpoint. A
// fourth sighting is evidence enough.
// Stalls of every rank on a save spacing of 4 steps over 13 and 17 steps (three and four
// sightings): the pattern row and spike steps of each.
void expect_checkpoint_only_at_17(const std::function<void(testing::SimRank&)>& stalls,
                                  const nlohmann::json& spike_steps_at_17) {
  for (const int steps : {13, 17}) {
    SCOPED_TRACE(steps);
    auto p = testing::sim_params(4, 2);
    p.steps = steps;
    for (auto& s : p.ranks) stalls(s);
    const model::Report r = run(p);
    if (steps == 13) {
      EXPECT_NE(row(r), "checkpoint") << r.json["pattern"].dump();
    } else {
      EXPECT_EQ(row(r), "checkpoint") << r.json["pattern"].dump();
      EXPECT_EQ(r.json["pattern"]["spike_steps"], spike_steps_at_17);
    }
  }
}

TEST(Pattern, ThreeStallsOfUnequalSizeAreNoCheckpointButFourAre) {
  // Before steps 3, 7, 11 (and 15); step 7's three times as long.
  expect_checkpoint_only_at_17(
      [](testing::SimRank& s) {
        s.spike_ns = 30'000'000;
        s.spike_every = 4;
        s.extra_spike_step = 7;
        s.extra_spike_ns = 60'000'000;
      },
      nlohmann::json({4, 8, 12, 16}));
}

TEST(Pattern, TheFirstSteadyStepIsNeverASave) {
  // Before steps 1, 5, 9 (and 13); step 0 warms up, step 1 is the first steady one.
  expect_checkpoint_only_at_17(
      [](testing::SimRank& s) {
        s.spike_ns = 30'000'000;
        s.spike_every = 4;
        s.spike_phase = 2;
      },
      nlohmann::json({6, 10, 14}));
}

TEST(Pattern, IrregularStallsAreNoCheckpoint) {
  // Stalls before steps 3, 4 and 9 only: no spacing holds 3 of them.
  auto p = testing::sim_params(2, 1);
  p.steps = 13;
  for (auto& s : p.ranks) {
    s.spike_ns = 30'000'000;
    s.extra_spike_step = 2;
  }
  const model::Report r = run(p);
  EXPECT_NE(row(r), "checkpoint") << r.json["pattern"].dump();
}

TEST(Pattern, OneRankLagging) {
  auto p = testing::sim_params(4, 2);
  p.ranks[1].host_stall_ns = 3'000'000;
  const model::Report r = run(p);
  EXPECT_EQ(row(r), "lagging");
  const model::Finding* f = pattern_finding(r);
  ASSERT_NE(f, nullptr);
  // The straggler finding's figures: 3 ms late where it happens; its cost, the exposed waiting
  // of the 3 peers (4 ms each: bucket 1's 3 ms and the queued buckets' 1 ms each, 6 ms of
  // waiting of which the step exposes 4 ms) over 4 ranks = 3 ms of an 18.5 ms step.
  EXPECT_EQ(f->text.rfind("one GPU lagging the rest — rank 1 (node-a) is 3.0 ms late at the first "
                          "all-reduce, costing 3.0 ms/step (16.2% of step time); cause "
                          "host-stall: host-side stall (data loading?)",
                          0),
            0u)
      << f->text;
  EXPECT_NE(f->text.find("DCGM"), std::string::npos);
}

TEST(Pattern, OneNodeLagging) {
  auto p = testing::sim_params(4, 2);
  p.ranks[2].compute_scale = 1.3;
  p.ranks[3].compute_scale = 1.3;
  const model::Report r = run(p);
  EXPECT_EQ(row(r), "lagging");
  EXPECT_EQ(pattern_finding(r)->text.rfind("one node lagging the rest — node node-b (2 ranks)", 0),
            0u)
      << pattern_finding(r)->text;
}

TEST(Pattern, DropsWithCollectives) {
  // All-reduces after the whole backward, 2 ms each: 8 ms exposed of a 22.5 ms step (36%).
  auto p = testing::sim_params(4, 2);
  p.after_backward = true;
  p.transfer_ns = 2'000'000;
  const model::Report r = run(p);
  EXPECT_EQ(row(r), "collective-drops") << r.json["pattern"].dump();
  EXPECT_NEAR(r.json["pattern"]["comm_drop_pct"].get<double>(), 100.0 * 8 / 22.5, 0.1);
  EXPECT_EQ(pattern_finding(r)->text.rfind("drops correlated with collectives: 36% of the step", 0),
            0u)
      << pattern_finding(r)->text;
}

TEST(Pattern, NoneOfTheUsualPatterns) {
  // A 5 ms input copy per step: useful 14 of 20 ms (70%), no idle, little exposed comm.
  auto p = testing::sim_params(2, 1);
  p.memcpy_ns = 5'000'000;
  const model::Report r = run(p);
  EXPECT_EQ(row(r), "none") << r.json["pattern"].dump();
  EXPECT_EQ(pattern_finding(r)->text.rfind("none of the usual patterns: useful compute 70%", 0), 0u)
      << pattern_finding(r)->text;
  EXPECT_NE(pattern_finding(r)->text.find("memcpy/memset 25%"), std::string::npos);
}

TEST(Pattern, HostOnlyIsNotJudged) {
  auto p = testing::sim_params(2, 1);
  p.host_only = true;
  EXPECT_EQ(row(run(p)), "not-judged");
}

// --- hand-built timelines --------------------------------------------------------------------

constexpr uint64_t kTp = 0x7e57;
constexpr uint64_t kDp = 0xd0d0;

struct Builder {
  model::RankTrace t;
  void kernel(int64_t b, int64_t e, bool nccl) {
    model::KernelEvent k;
    k.start_ns = b;
    k.end_ns = e;
    k.nccl = nccl;
    t.kernels.push_back(k);
  }
  void call(uint64_t comm, int64_t b, int64_t e, uint64_t bytes, uint64_t seq) {
    model::CallEvent c;
    c.enter_ns = b - 10'000;
    c.exit_ns = b - 5'000;
    c.comm_id = comm;
    c.seq = seq;
    c.count = bytes / 4;
    c.datatype = 7;
    c.func = format::Func::kAllReduce;
    c.gpu_start_ns = b;
    c.gpu_end_ns = e;
    t.calls.push_back(c);
    kernel(b, e, true);
  }
};

struct Judged {
  std::vector<RankBreakdown> breakdowns;
  std::vector<RankActivity> activities;
  std::vector<StepPlan> plans;
};

Judged judge_all(const model::JobTrace& job) {
  Judged j;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    j.activities.push_back(RankActivity::of(job.ranks[i]));
    j.plans.push_back(
        StepDetector::detect(job.ranks[i], j.activities[i].first_ns, j.activities[i].last_ns));
  }
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    j.breakdowns.push_back(StepBreakdownAnalysis::of_rank(job.ranks[i], i, j.activities[i],
                                                          j.plans[i], IntervalSet{}));
  }
  return j;
}

// Per step: `tiny` compute kernels of 10 µs each followed by a `gap` µs launch gap, then one
// 200 µs all-reduce of 25 MiB.
model::JobTrace tiny_kernels_job(int ranks, int steps, int tiny, int64_t gap_ns) {
  model::JobTrace job;
  for (int r = 0; r < ranks; ++r) {
    Builder b;
    b.t.info.rank = r;
    b.t.info.host = "node-a";
    b.t.comms.push_back({kDp, 0, 0, ranks, r, r, format::Func::kUnknown, 0, ""});
    int64_t t = 1'000'000'000;
    for (int s = 0; s < steps; ++s) {
      for (int k = 0; k < tiny; ++k) {
        b.kernel(t, t + 10'000, false);
        t += 10'000 + gap_ns;
      }
      b.call(kDp, t, t + 200'000, 25u << 20, static_cast<uint64_t>(s));
      t += 200'000 + gap_ns;
    }
    job.ranks.push_back(std::move(b.t));
  }
  return job;
}

TEST(Pattern, FlatLowFromManyTinyKernels) {
  // 500 kernels of 10 µs with 10 µs launch gaps: busy about half of every step.
  const model::JobTrace job = tiny_kernels_job(2, 8, 500, 10'000);
  const Judged j = judge_all(job);
  ASSERT_TRUE(j.breakdowns[0].steps_found);
  const PatternVerdict v = PatternVerdict::judge(job, j.breakdowns, StragglerResult{});
  const std::string text = PatternReport::text(v, StragglerResult{});
  EXPECT_EQ(v.row, PatternRow::kFlatLow) << text;
  EXPECT_NEAR(v.kernel_median_us, 10.0, 1e-9);
  EXPECT_NEAR(v.smi_pct, 100.0 * 5.2 / 10.21, 0.1);
  EXPECT_LT(v.step_spread_pct, 0.1);
  EXPECT_EQ(text.rfind("flat, steady low utilization: GPU busy 51% in every step", 0), 0u) << text;
  EXPECT_NE(text.find("500 compute kernels per step of median 10 µs"), std::string::npos) << text;
}

TEST(Pattern, BackToBackTinyKernelsAreHealthy) {
  const model::JobTrace job = tiny_kernels_job(2, 8, 500, 0);
  const Judged j = judge_all(job);
  EXPECT_EQ(PatternVerdict::judge(job, j.breakdowns, StragglerResult{}).row, PatternRow::kHealthy);
}

// 4 ranks on 2 hosts; per step `layers` x (compute 300 µs, then a blocking all-reduce of 2 MiB,
// 100 µs, on the tensor-parallel comm), then one data-parallel all-reduce hidden under the last
// layer's compute.
model::JobTrace tensor_parallel_job(int layers, int steps, bool tp_on_two_hosts) {
  model::JobTrace job;
  for (int r = 0; r < 4; ++r) {
    Builder b;
    b.t.info.rank = r;
    b.t.info.host = tp_on_two_hosts ? (r < 2 ? "node-a" : "node-b") : "node-a";
    b.t.comms.push_back({kTp, 0, 0, 4, r, r, format::Func::kUnknown, 0, ""});
    int64_t t = 1'000'000'000;
    uint64_t seq = 0;
    for (int s = 0; s < steps; ++s) {
      for (int l = 0; l < layers; ++l) {
        b.kernel(t, t + 300'000, false);
        t += 300'000;
        b.call(kTp, t, t + 100'000, 2u << 20, seq++);
        t += 100'000;
      }
      b.kernel(t, t + 1'000'000, false);  // optimizer
      t += 1'000'000;
    }
    job.ranks.push_back(std::move(b.t));
  }
  return job;
}

TEST(Pattern, TensorParallelAcrossNodes) {
  const model::JobTrace job = tensor_parallel_job(32, 6, true);
  const Judged j = judge_all(job);
  std::vector<const StepPlan*> plans;
  for (const auto& p : j.plans) plans.push_back(&p);
  const auto comms = CrossNodeComm::find(job, RankActivities(job, 1), plans);
  ASSERT_EQ(comms.size(), 1u);
  const CrossNodeComm& c = comms[0];
  EXPECT_EQ(c.comm_id, kTp);
  EXPECT_EQ(c.hosts, 2u);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_DOUBLE_EQ(c.per_step, 32.0);
  EXPECT_EQ(c.median_bytes, 2u << 20);
  EXPECT_NEAR(c.overlap_pct, 0.0, 1e-9);
  EXPECT_NEAR(c.interleaved_pct, 100.0, 1e-9);
  EXPECT_EQ(c.what, "all-reduces");
  EXPECT_TRUE(c.tensor_parallel_like);
}

TEST(Pattern, TensorParallelInsideANodeIsFine) {
  const model::JobTrace job = tensor_parallel_job(32, 6, false);
  const Judged j = judge_all(job);
  std::vector<const StepPlan*> plans;
  for (const auto& p : j.plans) plans.push_back(&p);
  EXPECT_TRUE(CrossNodeComm::find(job, RankActivities(job, 1), plans).empty());
}

TEST(Pattern, ManyDdpBucketsAcrossNodesAreNotTensorParallel) {
  // 20 buckets per step across 2 hosts: frequent, but hidden under backward (overlapped) or,
  // after backward, back to back (not between compute kernels).
  for (bool after : {false, true}) {
    auto p = testing::sim_params(4, 2);
    p.buckets = 20;
    p.segment_ns = 1'500'000;
    p.after_backward = after;
    const model::Report r = run(p);
    ASSERT_EQ(r.json["cross_node_comms"].size(), 1u);
    const auto& c = r.json["cross_node_comms"][0];
    EXPECT_DOUBLE_EQ(c["per_step"].get<double>(), 20.0);
    EXPECT_FALSE(c["tensor_parallel_like"].get<bool>()) << c.dump();
  }
}

TEST(Pattern, TensorParallelFindingInTheReport) {
  // Through analyze(): the finding names the comm; without matches there is no straggler.
  const model::JobTrace job = tensor_parallel_job(32, 6, true);
  model::Report r;
  model::MatchResult match;
  model::ClockAlignment clocks;
  clocks.rank_offset_ns.assign(4, 0);
  analyze(job, match, clocks, r);
  bool found = false;
  for (const auto& f : r.findings) {
    if (f.text.rfind("comm 0x0000000000007e57 (4 ranks, 2 nodes) carries 32 small all-reduces per "
                     "step across "
                     "nodes (median 2.0 MiB",
                     0) == 0) {
      found = true;
      EXPECT_NE(f.text.find("keep tensor parallelism inside a node"), std::string::npos);
    }
  }
  EXPECT_TRUE(found) << r.json["cross_node_comms"].dump();
  // The JSON spells it as comms[].id does (model::comm_hex), so the two join.
  EXPECT_EQ(r.json["cross_node_comms"][0]["comm_id"], "0x0000000000007e57");
}

}  // namespace
}  // namespace ncclwatch::analysis

// `ncclwatch diff` on report JSONs as untrusted input: a baseline from an older ncclwatch
// (keys missing), the same report twice, runs of different size, different jobs, and mutated
// documents (wrong types anywhere) that must never crash it or make it invent a change.
#include <gtest/gtest.h>
#include <algorithm>

#include <fstream>

#include <fmt/format.h>

#include "analysis/units.h"

#include "diff/diff_render.h"
#include "diff/run_comparison.h"
#include "diff/run_input.h"
#include "sim_reports.h"
#include "synthetic_trace.h"
#include "trace_files.h"

namespace ncclwatch::diff {
namespace {

using nlohmann::json;
using testing::noisy_job;
using testing::sim_report;

std::string dump(const DiffResult& r) {
  return render_text(r, {"base", "json", "new", "json"});
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines) {
    if (contains(l, what)) return true;
  }
  return false;
}

TEST(DiffReport, TheSameReportTwiceFlagsNothing) {
  const json report = sim_report(noisy_job(1));
  const DiffResult r = compare_reports(report, report);
  EXPECT_TRUE(r.flagged_keys().empty()) << dump(r);
  EXPECT_EQ(r.verdict.rfind("no significant change: step time", 0), 0u) << r.verdict;
  EXPECT_TRUE(r.notes.empty()) << dump(r);
  EXPECT_TRUE(r.not_compared.empty()) << dump(r);
}

TEST(DiffReport, BaselineOfAnOlderVersionStillDiffsWhatItHas) {
  // Reports before `diff` existed had no steady spread, no bus bandwidth or kernel table, no
  // environment, no bucket spread.
  json base = sim_report(noisy_job(1));
  base["breakdown_analysis"].erase("steady");
  for (const char* key : {"bus_bandwidth", "kernels", "kernels_analysis", "environment"})
    base.erase(key);
  for (json& b : base["buckets"]) {
    for (const char* key : {"occurrences", "overlap_pct_sd", "exposed_us_sd"}) b.erase(key);
  }
  auto stalled = noisy_job(2);
  for (auto& rank : stalled.ranks) rank.host_stall_ns = 5'000'000;
  const DiffResult r = compare_reports(base, sim_report(stalled));
  EXPECT_TRUE(contains(r.verdict.substr(0, r.verdict.find(';')),
                       "GPU idle at the step boundary +5.0 ms/step"))
      << r.verdict;
  EXPECT_TRUE(any_contains(r.notes, "BASE has no breakdown_analysis.steady")) << dump(r);
  EXPECT_TRUE(any_contains(r.notes, "BASE has no bus_bandwidth table")) << dump(r);
  EXPECT_TRUE(any_contains(r.notes, "BASE has no kernels table")) << dump(r);
  EXPECT_TRUE(r.busbw.empty());
  EXPECT_TRUE(r.kernels.empty());
  // And the older one unchanged against itself: nothing.
  EXPECT_TRUE(compare_reports(base, base).flagged_keys().empty());
}

TEST(DiffReport, RunsOfDifferentSizeComparePerStepAndRankClass) {
  auto small = analysis::testing::sim_params(4, 2), big = analysis::testing::sim_params(8, 2);
  const DiffResult same = compare_reports(sim_report(small), sim_report(big));
  EXPECT_TRUE(
      any_contains(same.notes, "runs of different size: BASE 4 ranks on 2 hosts, NEW 8 on 4"))
      << dump(same);
  EXPECT_EQ(same.verdict.rfind("no significant change", 0), 0u) << dump(same);
  // The simulator's all-reduce takes as long on 8 ranks as on 4: by nccl-tests' definition
  // (busbw = size / time x 2(n-1)/n) the bus bandwidth grew, and that is the only change.
  EXPECT_EQ(same.flagged_keys(), std::vector<std::string>{"busbw:all_reduce:16777216:cross-node"})
      << dump(same);
  EXPECT_TRUE(contains(same.verdict, "busbw 39.3 → 45.9 GB/s (not on the step's critical path)"))
      << same.verdict;
  EXPECT_TRUE(same.rank_compute.empty());  // no rank-by-rank comparison across sizes

  big.ranks[6].compute_scale = 1.3;
  const DiffResult slow = compare_reports(sim_report(small), sim_report(big));
  EXPECT_TRUE(contains(slow.verdict, "rank 6 (node-d) late in NEW only: slow GPU")) << slow.verdict;
  EXPECT_TRUE(contains(slow.verdict, "slowest rank only")) << slow.verdict;
  ASSERT_EQ(slow.rank_classes.size(), 2u);
  EXPECT_FALSE(slow.rank_classes[0].significant) << dump(slow);  // the median rank
  EXPECT_TRUE(slow.rank_classes[1].significant) << dump(slow);   // the slowest
}

TEST(DiffReport, DifferentJobsSayWhatCannotBeCompared) {
  auto base = noisy_job(1), other = noisy_job(2);
  other.buckets = 6;
  other.bucket_bytes = 6u << 20;
  other.segment_ns = 1'000'000;
  const DiffResult r = compare_reports(sim_report(base),
                                       sim_report(other, "void other_model::attention<4>(float*)"));
  EXPECT_TRUE(r.comm_differs) << dump(r);
  EXPECT_TRUE(r.compute_differs) << dump(r);
  EXPECT_TRUE(
      any_contains(r.not_compared, "communication differs (NEW has all_reduce of 4.0 MiB-8.0 MiB"))
      << dump(r);
  EXPECT_TRUE(any_contains(r.not_compared, "compute kernels differ")) << dump(r);
  EXPECT_TRUE(
      any_contains(r.not_compared, "gradient buckets differ (BASE 4 x 25 MiB, NEW 6 x 6.0 MiB)"))
      << dump(r);
  EXPECT_TRUE(contains(r.verdict, "between different jobs")) << r.verdict;
  EXPECT_FALSE(contains(r.verdict, "busbw")) << r.verdict;
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_TRUE(r.busbw.empty());
}

// What the runs' NCCL logs recorded: the version NCCL printed, the NCCL_* variables its ENV
// subsystem reported, the CUDA driver.
void recorded_nccl(json& report, const std::string& version, const json& settings,
                   const std::string& driver) {
  json& topo = report["topology"];
  topo["parse"]["nccl_lines"] = 120;
  topo["parse"]["versions"] = json::array({version});
  topo["environment"]["nccl_settings"] = settings;
  topo["environment"]["cuda_driver_versions"] = json::array({driver});
}

TEST(DiffReport, WhatChangedUnderneathExplainsASlowerTransfer) {
  // An upgrade: NCCL 2.18 -> 2.21, NCCL_ALGO=Tree set, the same driver; the transfer is slower.
  auto slow = noisy_job(2);
  slow.transfer_ns = 3 * noisy_job(1).transfer_ns;
  json base = sim_report(noisy_job(1)), now = sim_report(slow);
  recorded_nccl(base, "2.18.5+cuda12.2", {{"NCCL_IB_HCA", {"mlx5_0"}}}, "12.4");
  recorded_nccl(now, "2.21.5+cuda12.4", {{"NCCL_IB_HCA", {"mlx5_0"}}, {"NCCL_ALGO", {"Tree"}}},
                "12.4");
  const DiffResult r = compare_reports(base, now);
  EXPECT_TRUE(r.regression) << dump(r);
  const std::string first = r.verdict.substr(0, r.verdict.find(';'));
  EXPECT_TRUE(contains(first, "exposed communication +")) << r.verdict;
  EXPECT_TRUE(contains(first, "NCCL version 2.18.5 → 2.21.5")) << r.verdict;
  EXPECT_TRUE(contains(first, "CUDA (NCCL build) 12.2 → 12.4")) << r.verdict;
  EXPECT_TRUE(contains(first, "NCCL_ALGO (unset) → Tree")) << r.verdict;
  EXPECT_FALSE(contains(first, "NCCL_IB_HCA")) << r.verdict;  // the same in both
  EXPECT_FALSE(contains(first, "CUDA driver")) << r.verdict;
  // The same upgrade without a slower step is listed, not blamed: no verdict names it.
  const DiffResult calm = compare_reports(base, [&] {
    json j = sim_report(noisy_job(3));
    recorded_nccl(j, "2.21.5+cuda12.4", {{"NCCL_IB_HCA", {"mlx5_0"}}, {"NCCL_ALGO", {"Tree"}}},
                  "12.4");
    return j;
  }());
  EXPECT_EQ(calm.verdict.rfind("no significant change", 0), 0u) << dump(calm);
  EXPECT_FALSE(contains(calm.verdict, "NCCL")) << calm.verdict;
  EXPECT_TRUE(contains(dump(calm), "NCCL_ALGO")) << dump(calm);
}

// A straggler of both runs whose cost grew: its cost is read in the findings' unit (share of
// the job's rank-time and that share as time per step, as each report wrote them) and the
// verdict names it with both.
TEST(DiffReport, AStragglerOfBothRunsIsNamedByItsCost) {
  auto base = noisy_job(3), now = noisy_job(4);
  base.ranks[5].compute_scale = 1.15;
  now.ranks[5].compute_scale = 1.3;
  const json b = sim_report(base), n = sim_report(now);
  const DiffResult r = compare_reports(b, n);
  ASSERT_EQ(b["stragglers"].size(), 1u) << b["stragglers"].dump(1);
  ASSERT_EQ(n["stragglers"].size(), 1u) << n["stragglers"].dump(1);
  ASSERT_EQ(r.stragglers.size(), 1u) << dump(r);
  const FindingChange& f = r.stragglers[0];
  EXPECT_EQ(f.where, "both");
  ASSERT_TRUE(f.base_cost && f.new_cost);
  EXPECT_DOUBLE_EQ(f.base_cost->us_per_step, b["stragglers"][0]["cost_us_per_step"].get<double>());
  EXPECT_DOUBLE_EQ(f.base_cost->pct, b["stragglers"][0]["cost_pct"].get<double>());
  EXPECT_DOUBLE_EQ(f.new_cost->us_per_step, n["stragglers"][0]["cost_us_per_step"].get<double>());
  EXPECT_DOUBLE_EQ(f.new_cost->pct, n["stragglers"][0]["cost_pct"].get<double>());
  EXPECT_FALSE(f.flagged);  // in both runs: not one-sided
  EXPECT_TRUE(r.regression) << dump(r);
  const std::string first = r.verdict.substr(0, r.verdict.find(';'));
  EXPECT_TRUE(contains(first, "waiting for a late peer +")) << r.verdict;
  EXPECT_TRUE(contains(first, fmt::format("(rank 5 (node-b) costs {}/step → {}/step in exposed "
                                          "waiting)",
                                          analysis::human_time(f.base_cost->us_per_step * 1e3),
                                          analysis::human_time(f.new_cost->us_per_step * 1e3))))
      << r.verdict;
  const json out = render_json(r, {});
  EXPECT_EQ(out["stragglers"][0]["new_cost"]["cost_us_per_step"], f.new_cost->us_per_step);
  EXPECT_TRUE(contains(dump(r), "cost " + cost_text(f.base_cost) + " → " + cost_text(f.new_cost)))
      << dump(r);
}

// A baseline written before the findings' cost unit: its findings[] carry no cost, its
// stragglers' cost_us_per_step is the waiting summed over the ranks. The share is read, the time
// per step derived from it (not taken as ranks x larger), and a note says so.
TEST(DiffReport, ABaselineOfTheOlderCostUnitIsRead) {
  auto base = noisy_job(3), now = noisy_job(4);
  base.ranks[5].compute_scale = now.ranks[5].compute_scale = 1.3;
  json old = sim_report(base);
  for (json& f : old["findings"]) {
    f.erase("cost_pct");
    f.erase("cost_us_per_step");
  }
  ASSERT_EQ(old["stragglers"].size(), 1u);
  json& st = old["stragglers"][0];
  st["cost_us_per_step"] = st["cost_us_per_step"].get<double>() * 8;  // summed over 8 ranks
  const DiffResult r = compare_reports(old, sim_report(now));
  EXPECT_TRUE(any_contains(r.notes, "BASE predates the findings' cost unit")) << dump(r);
  ASSERT_EQ(r.stragglers.size(), 1u);
  ASSERT_TRUE(r.stragglers[0].base_cost.has_value());
  EXPECT_NEAR(r.stragglers[0].base_cost->us_per_step,
              st["cost_pct"].get<double>() / 100 * r.base.step_us(), 1e-6);
  EXPECT_NEAR(r.stragglers[0].base_cost->us_per_step, st["cost_us_per_step"].get<double>() / 8,
              0.05 * st["cost_us_per_step"].get<double>() / 8);
  // The same job: nothing flagged, whatever the unit.
  EXPECT_TRUE(r.flagged_keys().empty()) << dump(r);
  // A current report says nothing of the kind.
  EXPECT_FALSE(any_contains(compare_reports(sim_report(base), sim_report(now)).notes, "cost unit"));
}

// Leaves replaced by a value of each other type, one at a time: no exception, no crash;
// and a report diffed against a mutant of itself never claims a straggler appeared by itself.
// At most kLeaves leaves, spread evenly over the report's paths (every leaf took 15+ minutes
// under ASan: each mutant is a whole compare and three renders).
TEST(DiffReport, MutatedReportsNeverCrash) {
  constexpr std::size_t kLeaves = 160;
  const json report = sim_report(analysis::testing::sim_params(4, 2));
  const json flat = report.flatten();  // leaf paths
  const std::vector<json> replacements = {json(),        json("x"),      json(-1),  json(1e308),
                                          json::array(), json::object(), json(true)};
  std::vector<std::string> paths;
  for (const auto& [path, value] : flat.items()) {
    // One rank's first per_step entry stands for the other entries (all read alike).
    if (path.find("/per_step/") != std::string::npos &&
        path.rfind("/breakdown/0/per_step/0/", 0) != 0)
      continue;
    paths.push_back(path);
  }
  const std::size_t stride = std::max<std::size_t>(1, (paths.size() + kLeaves - 1) / kLeaves);
  std::size_t runs = 0;
  for (std::size_t i = 0; i < paths.size(); i += stride) {
    const std::string& path = paths[i];
    for (const json& v : replacements) {
      json doc = report;
      doc[json::json_pointer(path)] = v;
      EXPECT_NO_THROW({
        const DiffResult r = compare_reports(report, doc);
        (void)render_text(r, {});
        (void)render_json(r, {}).dump();
        (void)render_html(r, {});
      }) << path;
      ++runs;
    }
  }
  // Whole sections of the wrong type.
  for (const auto& [key, value] : report.items()) {
    for (const json& v : replacements) {
      json mutant = report;
      mutant[key] = v;
      EXPECT_NO_THROW((void)compare_reports(mutant, report)) << key;
    }
  }
  EXPECT_GT(runs, 500u);
}

class TempFiles : public ::testing::Test {
 protected:
  kineto::testing::TempDir dir;
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = dir.path(name);
    kineto::testing::write_file(p, text);
    return p;
  }
  std::string err_of(const std::string& path) {
    std::FILE* err = std::tmpfile();
    const auto run = load_run(path, "BASE", err, {});
    EXPECT_FALSE(run.has_value());
    std::rewind(err);
    std::string text(4096, '\0');
    text.resize(std::fread(text.data(), 1, text.size(), err));
    std::fclose(err);
    return text;
  }
};

TEST_F(TempFiles, ReportJsonToldFromKinetoByItsKeys) {
  const std::string report = write("report.json", sim_report(noisy_job(1)).dump(1));
  const std::string kineto = write("rank0.json", kineto::testing::synthetic_trace({}));
  EXPECT_TRUE(looks_like_report_json(report));
  EXPECT_FALSE(looks_like_report_json(kineto));
  EXPECT_FALSE(looks_like_report_json(dir.path("")));
  EXPECT_FALSE(looks_like_report_json(write("list.json", "[{\"schema_version\": 1}]")));
  const auto run = load_run(report, "BASE", stderr, {});
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->kind, "report JSON");
  EXPECT_EQ(run->report["schema_version"], 1);
}

TEST_F(TempFiles, BadReportsAreOneLine) {
  EXPECT_TRUE(contains(err_of(write("newer.json", R"({"schema_version": 99, "job": "x"})")),
                       "ncclwatch: BASE " + dir.path("newer.json") +
                           ": report written by a newer ncclwatch (schema_version 99"));
  EXPECT_TRUE(contains(err_of(write("zero.json", R"({"schema_version": 0})")),
                       "not an ncclwatch report (schema_version is not a positive integer)"));
  EXPECT_TRUE(contains(err_of(write("text.json", R"({"schema_version": "1"})")),
                       "not an ncclwatch report"));
  EXPECT_TRUE(contains(err_of(write("cut.json", R"({"breakdown": [1, 2, {"schema_version": 1)")),
                       "not a valid report JSON"));
  EXPECT_TRUE(contains(err_of(dir.path("missing.json")), "ncclwatch: "));
}

}  // namespace
}  // namespace ncclwatch::diff

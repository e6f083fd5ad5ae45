// `ncclwatch diff` on Nsight Systems SQLite exports, read by the loader `report` uses
// (collector/nsys): exports written from the documented schema (tests/collector/nsys), one file
// per run holding every process of the job.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "diff/diff_render.h"
#include "diff/run_comparison.h"
#include "diff/run_input.h"
#include "nsys_fixture.h"
#include "trace_files.h"

namespace ncclwatch::diff {
namespace {

using nsys::testing::FixtureSpec;

class NsysPair : public ::testing::Test {
 protected:
  kineto::testing::TempDir tmp;

  std::string run(const std::string& name, const FixtureSpec& spec) {
    const std::string path = tmp.path(name + ".sqlite");
    nsys::testing::write_nsys_export(path, spec);
    return path;
  }

  DiffResult diff(const std::string& base, const std::string& now) {
    const auto b = load_run(base, "BASE", stderr, {});
    const auto n = load_run(now, "NEW", stderr, {});
    EXPECT_TRUE(b && n);
    if (!b || !n) return {};
    EXPECT_EQ(b->kind, "Nsight Systems exports");
    EXPECT_EQ(n->kind, "Nsight Systems exports");
    return compare_reports(b->report, n->report);
  }
};

// Every flagged key starts with one of `allowed` (prefixes).
void expect_only(const DiffResult& r, const std::vector<std::string>& allowed) {
  for (const std::string& key : r.flagged_keys()) {
    bool ok = false;
    for (const std::string& a : allowed) ok = ok || key.rfind(a, 0) == 0;
    EXPECT_TRUE(ok) << "flagged beyond the injected cause: " << key << "\n" << render_text(r, {});
  }
}

TEST_F(NsysPair, TheSameCaptureTwiceFlagsNothing) {
  const DiffResult r = diff(run("a", {}), run("b", {}));
  EXPECT_EQ(r.base.ranks, 2u);
  EXPECT_GT(r.base.steps, 0u) << render_text(r, {});  // steps from the NVTX ranges
  EXPECT_TRUE(r.flagged_keys().empty()) << render_text(r, {});
  EXPECT_EQ(r.verdict.rfind("no significant change: step time 10.0 ms → 10.0 ms", 0), 0u)
      << r.verdict;
}

TEST_F(NsysPair, ALateRankIsNamedWithItsCost) {
  // Process 1's NCCL kernels start 300 µs late (they end with everyone's): rank 0 waits for it
  // where it sat idle before; the step does not change.
  FixtureSpec late;
  late.processes[1].nccl_delay_us = 300;
  const std::string now = run("late", late);
  const DiffResult r = diff(run("base", {}), now);
  EXPECT_FALSE(r.regression) << render_text(r, {});
  EXPECT_EQ(r.verdict.rfind("no significant change: step time", 0), 0u) << r.verdict;
  EXPECT_NE(r.verdict.find("rank 1 (node-a) late in NEW only"), std::string::npos) << r.verdict;
  expect_only(r, {"exposed_wait", "idle_other", "bucket_", "straggler:rank 1"});
  // Its cost as NEW's report says it, in the findings' unit.
  const auto report = load_run(now, "NEW", stderr, {});
  ASSERT_TRUE(report && report->report["stragglers"].size() == 1) << render_text(r, {});
  ASSERT_EQ(r.stragglers.size(), 1u);
  ASSERT_TRUE(r.stragglers[0].new_cost.has_value());
  EXPECT_FALSE(r.stragglers[0].base_cost.has_value());
  EXPECT_DOUBLE_EQ(r.stragglers[0].new_cost->us_per_step,
                   report->report["stragglers"][0]["cost_us_per_step"].get<double>());
  EXPECT_DOUBLE_EQ(r.stragglers[0].new_cost->pct,
                   report->report["stragglers"][0]["cost_pct"].get<double>());
}

}  // namespace
}  // namespace ncclwatch::diff

// `ncclwatch diff` on two PyTorch-profiler (Kineto) runs, read by the loader `report` uses:
// each a directory of one trace per rank (tests/collector/kineto/synthetic_trace.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "diff/diff_render.h"
#include "diff/run_comparison.h"
#include "diff/run_input.h"
#include "synthetic_trace.h"
#include "trace_files.h"

namespace ncclwatch::diff {
namespace {

using kineto::testing::SyntheticTraceSpec;

class KinetoPair : public ::testing::Test {
 protected:
  kineto::testing::TempDir tmp;

  // A 2-rank run of `steps` steps; `tweak` changes each rank's spec.
  template <typename Tweak>
  std::string run(const std::string& name, Tweak tweak) {
    const std::filesystem::path dir = tmp.dir() / name;
    std::filesystem::create_directories(dir);
    for (int rank = 0; rank < 2; ++rank) {
      SyntheticTraceSpec spec;
      spec.rank = rank;
      spec.world_size = 2;
      spec.steps = 24;
      tweak(spec);
      kineto::testing::write_file((dir / ("rank" + std::to_string(rank) + ".json")).string(),
                                  kineto::testing::synthetic_trace(spec));
    }
    return dir.string();
  }

  DiffResult diff(const std::string& base, const std::string& now) {
    const auto b = load_run(base, "BASE", stderr, {});
    const auto n = load_run(now, "NEW", stderr, {});
    EXPECT_TRUE(b && n);
    EXPECT_EQ(b->kind, "Kineto traces");
    return compare_reports(b->report, n->report);
  }
};

TEST_F(KinetoPair, SameRunTwiceFlagsNothing) {
  const auto base = run("a", [](SyntheticTraceSpec&) {});
  const auto again = run("b", [](SyntheticTraceSpec&) {});
  const DiffResult r = diff(base, again);
  EXPECT_TRUE(r.flagged_keys().empty()) << render_text(r, {});
  bool nccl = false;
  for (const EnvChange& e : r.environment) {
    nccl = nccl || (e.label == "NCCL version" && e.base == "2.21.5" && !e.changed);
  }
  EXPECT_TRUE(nccl) << render_text(r, {});
}

TEST_F(KinetoPair, OtherCommunicationIsNotBlamedOnTheLinks) {
  // A third all-reduce per step (4, 8 and 12 MiB instead of 4 and 8): not the same job's
  // communication.
  const auto base = run("base", [](SyntheticTraceSpec&) {});
  const auto more = run("more", [](SyntheticTraceSpec& s) { s.allreduces_per_step = 3; });
  const DiffResult r = diff(base, more);
  EXPECT_TRUE(r.comm_differs) << render_text(r, {});
  ASSERT_FALSE(r.not_compared.empty());
  EXPECT_NE(r.not_compared[0].find("communication differs (NEW moves 2.00x the collective bytes "
                                   "per step)"),
            std::string::npos)
      << r.not_compared[0];
  EXPECT_EQ(r.verdict.find("busbw"), std::string::npos) << r.verdict;
}

TEST_F(KinetoPair, MoreComputeKernelsNamedByTheirNormalizedName) {
  const auto base = run("base", [](SyntheticTraceSpec&) {});
  const auto more = run("more", [](SyntheticTraceSpec& s) { s.compute_kernels_per_step = 30; });
  const DiffResult r = diff(base, more);
  EXPECT_TRUE(r.regression) << render_text(r, {});
  EXPECT_EQ(r.verdict.rfind("step time +", 0), 0u) << r.verdict;
  EXPECT_NE(r.verdict.find("compute +"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4> "
                           "200 µs → 300 µs"),
            std::string::npos)
      << r.verdict;
  // Nothing but the step, its compute, and the launch gaps of the 10 kernels added per step
  // (the synthetic trace leaves a gap after each kernel). Hosts are not recorded: labels say
  // "rank 1", not "rank 1 ()".
  EXPECT_EQ(render_text(r, {}).find("()"), std::string::npos) << render_text(r, {});
  for (const std::string& key : r.flagged_keys()) {
    const bool explained = key == "step" || key.rfind("compute", 0) == 0 ||
                           key.rfind("kernel:", 0) == 0 || key == "idle_other" || key == "pattern";
    EXPECT_TRUE(explained) << "flagged beyond the injected cause: " << key << "\n"
                           << render_text(r, {});
  }
}

}  // namespace
}  // namespace ncclwatch::diff

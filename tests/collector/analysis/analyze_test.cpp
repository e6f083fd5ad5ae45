// analyze() with several workers must give the report it gives on one thread, byte for byte:
// the per-rank and per-instance passes write their own slots and combine partial results in a
// fixed order. Checked on noisy multi-node jobs of every scenario kind, GPU-timed and
// host-only, with more workers than cores (the interleavings differ from run to run).
#include <gtest/gtest.h>

#include "analysis/analyze.h"
#include "scenario_matrix.h"

namespace ncclwatch::analysis {
namespace {

std::string render(const model::Report& r) {
  std::string out;
  for (const auto& f : r.findings) {
    out += std::to_string(static_cast<int>(f.severity)) + " " + f.source + " " + f.text + "\n";
  }
  for (const auto& s : r.sections) out += "## " + s.title + "\n" + s.body;
  return out + r.json.dump(1);
}

TEST(Analyze, SameReportWhateverTheWorkerCount) {
  std::size_t checked = 0;
  for (testing::Kind kind : testing::kAllKinds) {
    for (bool host_only : {false, true}) {
      testing::ScenarioSpec spec;
      spec.kind = kind;
      spec.noise = testing::Noise::kGc;
      spec.noise_frac = 0.08;
      spec.host_only = host_only;
      spec.ranks = 24;
      spec.per_host = 4;
      spec.seed = 7;
      const testing::SimJob job = testing::simulate(testing::make_scenario(spec).params);
      model::Report one;
      analyze(job.job, job.match, job.clocks, one, 1);
      const std::string expected = render(one);
      ASSERT_FALSE(one.json["stragglers"].is_null());
      for (unsigned workers : {2u, 3u, 7u}) {
        model::Report many;
        analyze(job.job, job.match, job.clocks, many, workers);
        EXPECT_EQ(render(many), expected)
            << testing::to_string(kind) << (host_only ? " host-only" : " gpu") << ", " << workers
            << " workers";
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, std::size(testing::kAllKinds) * 2 * 3);
}

}  // namespace
}  // namespace ncclwatch::analysis

// The verdict matrix' deterministic subset (the full randomized matrix, with its precision and
// recall table, is tests/bench/analysis/verdict_matrix): every scenario kind at every noise
// level up to 10% of a step, GPU-timed and host-only, must be named exactly — right rank or
// node, pattern, period, cause — with no false straggler.
#include <gtest/gtest.h>

#include "analysis/analyze.h"
#include "scenario_matrix.h"

namespace ncclwatch::analysis {
namespace {

using testing::Kind;
using testing::Noise;

struct Case {
  Kind kind;
  Noise noise;
  bool host_only;
};

class VerdictMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(VerdictMatrix, NamedExactly) {
  const Case c = GetParam();
  for (uint64_t seed : {1u, 2u, 3u}) {
    testing::ScenarioSpec spec;
    spec.kind = c.kind;
    spec.noise = c.noise;
    spec.noise_frac = c.noise == Noise::kNone ? 0.0 : 0.10;
    spec.host_only = c.host_only;
    spec.ranks = 8;
    spec.per_host = 2;
    spec.seed = seed;
    const testing::Scenario sc = testing::make_scenario(spec);
    const testing::SimJob job = testing::simulate(sc.params);
    model::Report report;
    analyze(job.job, job.match, job.clocks, report);
    const testing::Score s = testing::score(sc, report.json);
    EXPECT_TRUE(s.exact()) << sc.description << "\n"
                           << s.detail << "\n"
                           << report.json["stragglers"].dump(1);
    // Delays alike on every rank never make a warning of their own.
    if (c.kind == Kind::kClean) {
      for (const auto& f : report.findings) {
        EXPECT_FALSE(f.source == "stragglers" && f.severity == model::Severity::kWarning) << f.text;
      }
    }
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (Kind k : testing::kAllKinds) {
    for (Noise n : {Noise::kNone, Noise::kJitter, Noise::kGc, Noise::kContention}) {
      for (bool host_only : {false, true}) out.push_back({k, n, host_only});
    }
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = std::string(testing::to_string(info.param.kind)) + "_" +
                  testing::to_string(info.param.noise) + (info.param.host_only ? "_host" : "_gpu");
  for (char& ch : s) {
    if (ch == '-') ch = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, VerdictMatrix, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace ncclwatch::analysis

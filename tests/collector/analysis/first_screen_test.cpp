// Issue 21 on the DDP simulator: the first screen lists the findings by cost (the same order in
// the text, the JSON and the HTML page), every figure reads the same wherever it is printed,
// and no verdict rests on data that cannot support it (sampled or NCCL-only compute kernels, a
// rank that lost most of its records, one rank alone).
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

#include "analysis/analyze.h"
#include "ddp_sim.h"
#include "export/html_report.h"
#include "report/json_renderer.h"
#include "report/text_renderer.h"

namespace ncclwatch::analysis {
namespace {

using nlohmann::json;

model::Report analyze_job(const testing::SimJob& s) {
  model::Report r;
  analyze(s.job, s.match, s.clocks, r);
  return r;
}

model::Report run(const testing::SimParams& p) {
  return analyze_job(testing::simulate(p));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t nl = text.find('\n', at);
    out.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

const model::Finding* finding(const model::Report& r, const std::string& source) {
  for (const model::Finding& f : r.findings) {
    if (f.source == source) return &f;
  }
  return nullptr;
}

bool any_warning(const model::Report& r) {
  for (const model::Finding& f : r.findings) {
    if (f.severity >= model::Severity::kWarning) return true;
  }
  return false;
}

std::string all_text(const model::Report& r) {
  return report::render_text(r);
}

// The stall + slow rank job of the issue: every rank stalls 30 ms before each step (the
// nominal step is 15.5 ms: ~64 % of the step idle) and rank 2's GPU is 1.3x slower.
testing::SimParams stall_and_slow_rank() {
  auto p = testing::sim_params(4, 2);
  for (auto& r : p.ranks) r.host_stall_ns = 30'000'000;
  p.ranks[2].compute_scale = 1.3;
  p.steps = 20;
  return p;
}

TEST(FirstScreen, TheStallComesFirstAndNothingCallsTheStragglerTheFirstFix) {
  const model::Report r = run(stall_and_slow_rank());
  const std::vector<std::string> text = lines_of(all_text(r));
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text[0].rfind("WARNING  [pattern] sawtooth: GPU idle", 0), 0u) << all_text(r);
  // The straggler is found, and named smaller than the stall in the pattern line.
  ASSERT_FALSE(r.json["stragglers"].empty());
  EXPECT_EQ(r.json["stragglers"][0]["rank"], 2);
  EXPECT_NE(text[0].find("Also, smaller than this stall: rank 2"), std::string::npos) << text[0];
  for (const std::string& l : text) EXPECT_EQ(l.find("fix it first"), std::string::npos) << l;
  // Costs: warnings in decreasing order; the stall's is the boundary idle, > 60 %.
  const json j = report::render_json(r);
  double previous = 1e9;
  for (const json& f : j["findings"]) {
    if (f["severity"] != "warning" || f["cost_pct"].is_null()) continue;
    EXPECT_LE(f["cost_pct"].get<double>(), previous) << j["findings"].dump(1);
    previous = f["cost_pct"].get<double>();
  }
  EXPECT_EQ(j["findings"][0]["source"], "pattern");
  EXPECT_GT(j["findings"][0]["cost_pct"].get<double>(), 60.0);
  // The page lists them in the same order.
  const json page = exporter::HtmlReport::page_data(r);
  ASSERT_EQ(page["findings"].size(), j["findings"].size());
  for (std::size_t i = 0; i < page["findings"].size(); ++i)
    EXPECT_EQ(page["findings"][i]["text"], j["findings"][i]["text"]) << i;
}

TEST(FirstScreen, WithoutTheStallTheStragglerIsTheFirstFix) {
  auto p = stall_and_slow_rank();
  for (auto& x : p.ranks) x.host_stall_ns = 0;
  p.ranks[2].compute_scale = 1.6;
  p.after_backward = true;  // its lateness is exposed on every peer
  const model::Report r = run(p);
  const json j = report::render_json(r);
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0]["severity"], "warning") << j["findings"].dump(1);
  const std::string first = j["findings"][0]["text"];
  EXPECT_NE(first.find("rank 2"), std::string::npos) << j["findings"].dump(1);
}

// A figure printed as "16.5 ms", "+16.5 ms", "16.5" (ms) or "16500.0" (µs) read back in ms.
double ms_after(const std::string& s, const std::string& anchor) {
  const std::size_t at = s.find(anchor);
  if (at == std::string::npos) return NAN;
  std::smatch m;
  const std::string rest = s.substr(at + anchor.size());
  if (!std::regex_search(rest, m, std::regex(R"(([0-9]+(?:\.[0-9]+)?) (ms|µs|ns|s)\b)")))
    return NAN;
  const double v = std::stod(m[1]);
  const std::string unit = m[2];
  return unit == "s" ? v * 1e3 : unit == "ms" ? v : unit == "µs" ? v / 1e3 : v / 1e6;
}

TEST(FirstScreen, OneNumberPerFigureWhereverItIsPrinted) {
  // Rank 2's GPU is 1.3x slower; no stall.
  auto p = testing::sim_params(4, 2);
  p.ranks[2].compute_scale = 1.3;
  p.steps = 20;
  const model::Report r = run(p);
  const json j = report::render_json(r);
  ASSERT_FALSE(j["stragglers"].empty());
  const json& s = j["stragglers"][0];
  ASSERT_EQ(s["rank"], 2);
  const double late_ms = s["lateness_us"].get<double>() / 1000.0;

  // Lateness: the finding, the Stragglers table's late/step, the pattern line, the page.
  const model::Finding* f = nullptr;
  for (const model::Finding& x : r.findings) {
    if (x.source == "stragglers" && x.text.rfind("rank 2 ", 0) == 0) f = &x;
  }
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(ms_after(f->text, " is "), late_ms, 0.051) << f->text;
  const std::string table = r.sections[0].body;
  const std::size_t row = table.find("\n     2 node-b");
  ASSERT_NE(row, std::string::npos) << table;
  const std::string row_text = table.substr(row + 1, table.find('\n', row + 1) - row - 1);
  EXPECT_NEAR(ms_after(row_text, "%"), late_ms, 0.051) << row_text;  // after fair%: late/step
  const model::Finding* pattern = finding(r, "pattern");
  ASSERT_NE(pattern, nullptr);
  EXPECT_NEAR(ms_after(pattern->text, "rank 2 (node-b) is "), late_ms, 0.051) << pattern->text;
  const json page = exporter::HtmlReport::page_data(r);
  ASSERT_FALSE(page["waits"]["stragglers"].empty());
  EXPECT_NEAR(page["waits"]["stragglers"][0]["lateness_ms"].get<double>(), late_ms, 0.051);

  // Cost: within the step, the share and the time per step the same figure, in every place.
  const double step_ms = j["straggler_analysis"]["step_us"].get<double>() / 1000.0;
  const double cost_ms = s["cost_us_per_step"].get<double>() / 1000.0;
  const double cost_pct = s["cost_pct"].get<double>();
  EXPECT_GT(cost_ms, 0);
  EXPECT_LE(cost_ms, step_ms);
  EXPECT_NEAR(cost_ms, cost_pct / 100.0 * step_ms, 0.02 * step_ms);
  EXPECT_NEAR(ms_after(f->text, "costing "), cost_ms, 0.051) << f->text;
  EXPECT_NEAR(ms_after(pattern->text, "costing "), cost_ms, 0.051) << pattern->text;
  EXPECT_NEAR(page["waits"]["stragglers"][0]["cost_ms"].get<double>(), cost_ms, 0.051);
  ASSERT_TRUE(f->cost.has_value());
  EXPECT_DOUBLE_EQ(f->cost->pct, cost_pct);
  // The straggler's cost is the waiting it causes that compute does not hide: never more than
  // the exposed waiting the pattern line, the overlap line and the breakdown report.
  const double wait_pct = 100.0 * j["overlap_analysis"]["wait_us_per_step"].get<double>() /
                          j["overlap_analysis"]["step_us"].get<double>();
  EXPECT_LE(cost_pct, wait_pct + 0.5);
  double bd_wait = 0, bd_step = 0;
  for (const json& b : j["breakdown"]) {
    bd_wait += b["exposed_wait_us"].get<double>();
    bd_step += b["step_us"].get<double>();
  }
  EXPECT_NEAR(100.0 * bd_wait / bd_step, wait_pct, 0.5);
  // "waiting N% of the step" in the pattern line is that same share.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(pattern->text, m, std::regex(R"(waiting ([0-9]+)% of the step)")))
      << pattern->text;
  EXPECT_NEAR(std::stod(m[1]), wait_pct, 0.51);

  // Exposed communication: the overlap line, the overlap summary and the step breakdown (its
  // exposed wait + exposed transfer) give the same share of the step.
  const double exposed_pct = 100.0 * j["overlap_analysis"]["exposed_us_per_step"].get<double>() /
                             j["overlap_analysis"]["step_us"].get<double>();
  EXPECT_GT(exposed_pct, 0);
  double bd_exposed = 0;
  for (const json& b : j["breakdown"])
    bd_exposed += b["exposed_wait_us"].get<double>() + b["exposed_transfer_us"].get<double>();
  EXPECT_NEAR(100.0 * bd_exposed / bd_step, exposed_pct, 0.5);
  const model::Finding* overlap = finding(r, "overlap");
  ASSERT_NE(overlap, nullptr);
  ASSERT_TRUE(std::regex_search(overlap->text, m, std::regex(R"(\(([0-9]+)% of a )")))
      << overlap->text;
  EXPECT_NEAR(std::stod(m[1]), exposed_pct, 0.51) << overlap->text;

  // Cause: one vocabulary — the page shows the finding's own words.
  EXPECT_EQ(s["cause"], "gpu-slow");
  const std::string words = s["cause_text"];
  EXPECT_NE(f->text.find("gpu-slow: " + words), std::string::npos) << f->text;
  EXPECT_EQ(page["waits"]["stragglers"][0]["cause_text"], words);
}

// NCCLWATCH_KERNELS=sampled:N as the shim applies it: compute kernels, memcpy and memset only
// in the 1 s windows w with w % N == 0 (NCCL kernels always kept); nccl: none of them.
void filter_kernels(testing::SimJob& s, uint32_t every, bool nccl_only) {
  for (model::RankTrace& t : s.job.ranks) {
    std::vector<model::KernelEvent> kept;
    std::vector<int32_t> index(t.kernels.size(), -1);
    uint64_t filtered = 0;
    for (std::size_t k = 0; k < t.kernels.size(); ++k) {
      const model::KernelEvent& e = t.kernels[k];
      const bool keep = e.nccl || (!nccl_only && (e.start_ns / 1'000'000'000) % every == 0);
      if (!keep) {
        ++filtered;
        continue;
      }
      index[k] = static_cast<int32_t>(kept.size());
      kept.push_back(e);
    }
    for (model::CallEvent& c : t.calls) {
      if (c.kernel >= 0) c.kernel = index[static_cast<std::size_t>(c.kernel)];
    }
    t.kernels = std::move(kept);
    t.info.kernels = nccl_only ? model::KernelScope::kNcclOnly : model::KernelScope::kSampled;
    t.info.kernel_sample_every = nccl_only ? 0 : every;
    t.info.losses.counts.kernels_filtered = filtered;
  }
}

TEST(FirstScreen, SampledKernelsJudgeOnlyTheSampledSteps) {
  // A healthy 400-step job (~6.2 s): sampled:4 keeps seconds 0 and 4.
  auto p = testing::sim_params(4, 2);
  p.steps = 400;
  const model::Report full = run(p);
  auto s = testing::simulate(p);
  filter_kernels(s, 4, false);
  const model::Report r = analyze_job(s);
  // The same verdicts as with every kernel (the sim's 1 ms of exposed transfer in a 15.5 ms
  // step is an overlap warning either way), no sawtooth from the steps without compute.
  auto verdicts = [](const model::Report& x) {
    std::vector<std::pair<std::string, model::Severity>> v;
    for (const model::Finding& f : x.findings) v.emplace_back(f.source, f.severity);
    return v;
  };
  EXPECT_EQ(verdicts(r), verdicts(full)) << all_text(r) << all_text(full);
  EXPECT_EQ(r.json["pattern"]["row"], "healthy") << r.json["pattern"].dump();
  const double overlap = r.json["overlap_analysis"]["overlap_pct"].get<double>();
  EXPECT_NEAR(overlap, full.json["overlap_analysis"]["overlap_pct"].get<double>(), 2.0);
  EXPECT_NEAR(r.json["breakdown_analysis"]["useful_compute_pct"].get<double>(),
              full.json["breakdown_analysis"]["useful_compute_pct"].get<double>(), 2.0);
  // Labelled: where the figures come from.
  EXPECT_NE(finding(r, "pattern")->text.find("NCCLWATCH_KERNELS=sampled:4"), std::string::npos)
      << finding(r, "pattern")->text;
  EXPECT_NE(finding(r, "overlap")->text.find("NCCLWATCH_KERNELS=sampled:4"), std::string::npos)
      << finding(r, "overlap")->text;
  // The page's heatmap leaves the unsampled steps out (no cell reads 0% from missing compute).
  const json page = exporter::HtmlReport::page_data(r);
  for (const json& v : page["heatmap"]["values"]) {
    if (v.get<double>() >= 0) {
      EXPECT_GT(v.get<double>(), 50.0);
    }
  }
}

TEST(FirstScreen, ShortSampledOrNcclOnlyJobsAreNotJudgedAndSaySo) {
  // 10 steps (~0.16 s) that start at second 1: no sampled window of sampled:4 holds a step.
  auto p = testing::sim_params(4, 2);
  p.steps = 10;
  for (auto& x : p.ranks) x.clock_skew_ns = 1'200'000'000;
  for (const bool nccl_only : {false, true}) {
    auto s = testing::simulate(p);
    filter_kernels(s, 4, nccl_only);
    const model::Report r = analyze_job(s);
    const std::string text = all_text(r);
    EXPECT_FALSE(any_warning(r)) << text;
    EXPECT_EQ(text.find("host-only records"), std::string::npos) << text;
    EXPECT_EQ(r.json["pattern"]["row"], "not-judged");
    const std::string scope = nccl_only ? "NCCLWATCH_KERNELS=nccl" : "NCCLWATCH_KERNELS=sampled:4";
    EXPECT_NE(finding(r, "pattern")->text.find(scope), std::string::npos)
        << finding(r, "pattern")->text;
    EXPECT_NE(finding(r, "overlap")->text.find(scope), std::string::npos)
        << finding(r, "overlap")->text;
  }
}

TEST(FirstScreen, ARankThatLostMostOfItsRecordsGetsNoWarning) {
  // Every rank stalls 5 ms (a sawtooth), rank 1 another 3 ms (a straggler) — and rank 1 lost
  // 95 % of its records (ring full): nothing at warning level, the loss named.
  auto p = testing::sim_params(4, 2);
  for (auto& x : p.ranks) x.host_stall_ns = 5'000'000;
  p.ranks[1].host_stall_ns = 8'000'000;
  auto s = testing::simulate(p);
  const model::Report before = analyze_job(s);
  ASSERT_TRUE(any_warning(before));  // the same job without losses warns
  model::RankInfo& info = s.job.ranks[1].info;
  info.records = 1000;
  info.losses.ring_full = 19'000;
  const model::Report r = analyze_job(s);
  EXPECT_FALSE(any_warning(r)) << all_text(r);
  ASSERT_FALSE(r.json["stragglers"].empty());
  EXPECT_EQ(r.json["stragglers"][0]["severity"], "info");
  const std::string text = all_text(r);
  EXPECT_NE(text.find("lost 95% of its records (ring full 19,000 records)"), std::string::npos)
      << text;
}

TEST(FirstScreen, OneRankAloneGetsNoCrossRankClaim) {
  // One rank's trace, all-reduces after backward (exposed communication, no peer traced).
  auto p = testing::sim_params(1, 1);
  p.after_backward = true;
  const model::Report r = run(p);
  const std::string text = all_text(r);
  EXPECT_EQ(text.find("0 ns waiting for peers"), std::string::npos) << text;
  EXPECT_EQ(text.find("no straggler:"), std::string::npos) << text;
  EXPECT_EQ(text.find("communication is the bottleneck"), std::string::npos) << text;
  ASSERT_NE(finding(r, "stragglers"), nullptr) << text;
  EXPECT_NE(finding(r, "stragglers")->text.find("stragglers not judged"), std::string::npos);
  ASSERT_NE(finding(r, "overlap"), nullptr) << text;
  EXPECT_NE(finding(r, "overlap")->text.find("not measured: one rank traced"), std::string::npos)
      << finding(r, "overlap")->text;
}

}  // namespace
}  // namespace ncclwatch::analysis

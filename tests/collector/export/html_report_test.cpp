// The --html page's data: big jobs are aggregated to a bounded page, every plot gets its data
// from the report's JSON, and nothing in the data can close the page's <script>.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "export/html_report.h"

namespace ncclwatch::exporter {
namespace {

using nlohmann::json;

// `ranks` GPU-timed ranks x `steps` steps; rank r's utilization is r % 100 in every step.
model::Report synthetic(std::size_t ranks, std::size_t steps) {
  model::Report r;
  json list = json::array();
  for (std::size_t i = 0; i < ranks; ++i) {
    json per_step = json::array();
    for (std::size_t k = 0; k < steps; ++k) {
      per_step.push_back({{"smi_util_pct", static_cast<double>(i % 100)},
                          {"step_us", 1000.0 + static_cast<double>(k)},
                          {"comm_overlapped_us", 30.0},
                          {"exposed_wait_us", 10.0},
                          {"exposed_transfer_us", 60.0}});
    }
    list.push_back({{"rank", i},
                    {"basis", "gpu"},
                    {"compute_us", 800.0},
                    {"exposed_wait_us", 10.0},
                    {"per_step", per_step}});
  }
  r.json["breakdown"] = list;
  r.json["overlap"] = json::array({{{"rank", 0}, {"steps", 10}, {"wait_us", 20'000.0}}});
  r.findings.push_back({model::Severity::kWarning, "pattern", "sawtooth"});
  return r;
}

TEST(HtmlReport, SmallJobIsDrawnCellByCell) {
  const json d = HtmlReport::page_data(synthetic(4, 6));
  EXPECT_EQ(d["heatmap"]["rows"], 4);
  EXPECT_EQ(d["heatmap"]["cols"], 6);
  EXPECT_EQ(d["heatmap"]["values"][6 * 3 + 2], 3.0);  // rank 3, step 3
  EXPECT_EQ(d["heatmap"]["row_labels"][2], "rank 2");
  EXPECT_EQ(d["breakdown"]["bars"].size(), 4u);
  EXPECT_DOUBLE_EQ(d["breakdown"]["bars"][0]["ms"][0].get<double>(), 0.8);  // 800 µs compute
  ASSERT_EQ(d["steps"]["step_ms"].size(), 6u);
  EXPECT_DOUBLE_EQ(d["steps"]["step_ms"][5].get<double>(), 1.01);      // 1005 µs, 2 decimals
  EXPECT_DOUBLE_EQ(d["steps"]["overlap_pct"][0].get<double>(), 30.0);  // 30 of 100 µs comm
  EXPECT_DOUBLE_EQ(d["waits"]["bars"][0]["ms"].get<double>(), 2.0);    // 20 ms over 10 steps
  EXPECT_EQ(d["findings"][0]["severity"], "warning");
}

TEST(HtmlReport, BigJobIsAggregated) {
  // 512 ranks x 450 steps: 128 rank rows x 400 step columns, means of what they cover (the
  // same code bins 4096 x 10 000; this size keeps the test fast).
  const model::Report r = synthetic(512, 450);
  const json d = HtmlReport::page_data(r);
  EXPECT_EQ(d["heatmap"]["rows"], kMaxRows);
  EXPECT_EQ(d["heatmap"]["cols"], kMaxCols);
  EXPECT_EQ(d["heatmap"]["values"].size(), kMaxRows * kMaxCols);
  EXPECT_EQ(d["heatmap"]["row_labels"][0], "ranks 0-3");
  // Row 0 = ranks 0..3: mean utilization 1.5 in every column.
  EXPECT_DOUBLE_EQ(d["heatmap"]["values"][0].get<double>(), 1.5);
  EXPECT_EQ(d["breakdown"]["bars"].size(), kMaxBars);
  EXPECT_EQ(d["steps"]["step_ms"].size(), 450u);
  EXPECT_LT(HtmlReport::render(r).size(), 600'000u);
}

TEST(HtmlReport, JobOf4096RanksAnd10000StepsStaysAPageOfBoundedSize) {
  // What breakdown[] holds for 4096 ranks x 10 000 steps (StepBreakdownReport's rule: 16
  // per_step entries per rank, the warm-up step then 15 merged groups); rank r's utilization is
  // r % 100, and the last group of every rank drops to 10 % (a slow end of the run).
  model::Report r;
  json list = json::array();
  for (std::size_t i = 0; i < 4096; ++i) {
    json per_step = json::array();
    per_step.push_back({{"step", 1}, {"last_step", 1}, {"smi_util_pct", 50.0}, {"step_us", 900.0}});
    for (std::size_t g = 0; g < 15; ++g) {
      const std::size_t first = 2 + g * 9999 / 15, last = 1 + (g + 1) * 9999 / 15;
      per_step.push_back({{"step", first},
                          {"last_step", last},
                          {"merged_steps", last - first + 1},
                          {"smi_util_pct", g == 14 ? 10.0 : static_cast<double>(i % 100)},
                          {"step_us", 1000.0},
                          {"comm_overlapped_us", 30.0},
                          {"exposed_transfer_us", 70.0}});
    }
    list.push_back({{"rank", i}, {"basis", "gpu"}, {"compute_us", 800.0}, {"per_step", per_step}});
  }
  r.json["breakdown"] = list;
  const json d = HtmlReport::page_data(r);
  EXPECT_EQ(d["heatmap"]["rows"], kMaxRows);
  EXPECT_EQ(d["heatmap"]["cols"], kMaxCols);
  EXPECT_EQ(d["heatmap"]["col_labels"][0], "steps 1-25");
  EXPECT_EQ(d["heatmap"]["col_labels"][kMaxCols - 1], "steps 9976-10000");
  // Every cell has data; row 0 (ranks 0-31) in a middle column: mean utilization 15.5; the last
  // column lies in the slow last group: 10.
  for (const json& v : d["heatmap"]["values"]) ASSERT_GE(v.get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(d["heatmap"]["values"][200].get<double>(), 15.5);
  EXPECT_DOUBLE_EQ(d["heatmap"]["values"][kMaxCols - 1].get<double>(), 10.0);
  ASSERT_EQ(d["steps"]["step_ms"].size(), kMaxSteps);
  EXPECT_DOUBLE_EQ(d["steps"]["step_ms"][500].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(d["steps"]["overlap_pct"][500].get<double>(), 30.0);
  EXPECT_EQ(d["breakdown"]["bars"].size(), kMaxBars);
  EXPECT_LT(HtmlReport::render(r).size(), 600'000u);
}

TEST(HtmlReport, DataCannotCloseTheScript) {
  model::Report r = synthetic(1, 1);
  r.findings.push_back({model::Severity::kInfo, "x", "</script><script>alert(1)</script>\xff"});
  // `<!--<script>` would put the HTML parser into the script data double-escaped state: the
  // rest of the page becomes script text.
  r.json["job"] =
      "<!--<script>a&b\xe2\x80\xa8"
      "c\xe2\x80\xa9";
  const std::string page = HtmlReport::render(r);
  const std::size_t begin = page.find("<script type=\"application/json\" id=\"data\">");
  ASSERT_NE(begin, std::string::npos);
  const std::size_t data = page.find('>', begin) + 1;
  const std::size_t end = page.find("</script>", data);
  ASSERT_NE(end, std::string::npos);
  const std::string text = page.substr(data, end - data);
  for (const char* bad : {"<", ">", "&", "\xe2\x80\xa8", "\xe2\x80\xa9"})
    EXPECT_EQ(text.find(bad), std::string::npos) << bad;
  // The data parses back to the same strings (invalid UTF-8 replaced).
  const json back = json::parse(text);
  EXPECT_EQ(back["job"],
            "<!--<script>a&b\xe2\x80\xa8"
            "c\xe2\x80\xa9");
  EXPECT_EQ(back["findings"][1]["text"], "</script><script>alert(1)</script>\xef\xbf\xbd");
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
}

TEST(HtmlReport, PartialLastStepIsLeftOutOfThePerStepPlots) {
  // 4 steps; the last lacks its tail (per_step partial: true): 100 % busy, a step at the floor.
  model::Report r = synthetic(2, 4);
  for (json& rank : r.json["breakdown"]) {
    for (std::size_t k = 0; k < 4; ++k) rank["per_step"][k]["step"] = k + 1;
    json& last = rank["per_step"][3];
    last["partial"] = true;
    last["smi_util_pct"] = 100.0;
    last["step_us"] = 50.0;
  }
  const json d = HtmlReport::page_data(r);
  EXPECT_EQ(d["heatmap"]["cols"], 3);
  EXPECT_EQ(d["heatmap"]["steps"], 3);
  EXPECT_TRUE(d["heatmap"]["partial_left_out"].get<bool>());
  EXPECT_EQ(d["heatmap"]["col_labels"].back(), "step 3");
  for (const json& v : d["heatmap"]["values"]) EXPECT_LT(v.get<double>(), 100.0);
  ASSERT_EQ(d["steps"]["step_ms"].size(), 3u);
  EXPECT_DOUBLE_EQ(d["steps"]["step_ms"][2].get<double>(), 1.0);  // 1002 µs
}

TEST(HtmlReport, NumbersAreRoundedToTheirDecimals) {
  // 3860 µs of GPU time: 3.86 ms, written "3.86" (round1(38.6) / 10 was 3.8600000000000003).
  model::Report r = synthetic(1, 1);
  r.json["buckets"] = json::array({{{"comm_id", "0x1"},
                                    {"ordinal", 0},
                                    {"bytes", 26214400.0},
                                    {"gpu_us", 3860.0},
                                    {"overlap_pct", 38.6},
                                    {"exposed_us_per_step", 2370.0}}});
  const json d = HtmlReport::page_data(r);
  EXPECT_EQ(d["buckets"][0]["gpu_ms"].dump(), "3.86");
  EXPECT_EQ(d["buckets"][0]["exposed_ms"].dump(), "2.37");
  EXPECT_EQ(d["buckets"][0]["mib"].dump(), "25.0");
}

TEST(HtmlReport, UtilizationCurveIsTakenWhole) {
  model::Report r = synthetic(1, 1);
  r.json["utilization"] = {{"gpu_ranks", 1}, {"window", {{"bins", 2}, {"busy_pct", {0.0, 99.5}}}}};
  EXPECT_EQ(HtmlReport::page_data(r)["utilization"], r.json["utilization"]);
  EXPECT_EQ(HtmlReport::page_data(synthetic(1, 1))["utilization"], json::object());
}

// The whole run's plot lists each capture window with what triggered it (capture by itself:
// "window 2 (step-time: step time +18% since ...)"); the words stay data, never markup.
TEST(HtmlReport, HistoryWindowsCarryTheirTrigger) {
  model::Report r;
  r.json["history"] = {
      {"start_realtime_ns", 0},
      {"periods",
       json::array({{{"start_realtime_ns", 0}, {"end_realtime_ns", 6e10}, {"step_ms", 20.0}}})}};
  const std::string words = "step time +18% since 03:12:05 UTC (rank 1: compute +3.0 ms)</script>";
  r.json["windows"] = json::array(
      {{{"index", 1}, {"trigger", "schedule"}, {"text", ""}, {"start_realtime_ns", 0}},
       {{"index", 2}, {"trigger", "step-time"}, {"text", words}, {"start_realtime_ns", 3e10}}});
  const json d = HtmlReport::page_data(r);
  ASSERT_EQ(d["history"]["windows"].size(), 2u);
  EXPECT_EQ(d["history"]["windows"][1]["trigger"], "step-time");
  EXPECT_EQ(d["history"]["windows"][1]["text"], words);
  const std::string page = HtmlReport::render(r);
  EXPECT_NE(page.find("id=\"hist-windows\""), std::string::npos);
  EXPECT_EQ(page.find(words), std::string::npos) << "escaped inside the page's data";
  EXPECT_NE(page.find("step time +18% since 03:12:05 UTC"), std::string::npos);
}

TEST(HtmlReport, ReportWithoutAnalysesStillRenders) {
  model::Report r;
  const json d = HtmlReport::page_data(r);
  EXPECT_EQ(d["heatmap"]["rows"], 0);
  EXPECT_TRUE(d["buckets"].empty());
  EXPECT_FALSE(HtmlReport::render(r).empty());
}

}  // namespace
}  // namespace ncclwatch::exporter

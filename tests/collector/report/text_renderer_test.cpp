#include "report/text_renderer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "report/json_renderer.h"

namespace ncclwatch::report {

TEST(TextRenderer, FindingsBySeverityThenSectionsInOrder) {
  model::Report r;
  r.findings = {{model::Severity::kInfo, "collector", "fine"},
                {model::Severity::kCritical, "collector", "hang"},
                {model::Severity::kWarning, "overlap", "slow"},
                {model::Severity::kCritical, "stragglers", "late"}};
  r.sections = {{"Ranks", "table\n"}, {"Overlap", "no newline"}};
  std::string t = render_text(r);
  EXPECT_EQ(t,
            "CRITICAL [collector] hang\n"
            "CRITICAL [stragglers] late\n"
            "WARNING  [overlap] slow\n"
            "info     [collector] fine\n"
            "\n== Ranks\ntable\n"
            "\n== Overlap\nno newline\n"
            "\n" +
                std::string(kGlossaryFooter) + "\n");
}

TEST(TextRenderer, WarningsByCostLargestFirstTheDataFirstOfAll) {
  // Critical first; within a severity the findings about the data (collector), then by cost,
  // then the rest in the order written — in the text and the JSON alike.
  model::Report r;
  r.findings = {
      {model::Severity::kWarning, "stragglers", "straggler", model::FindingCost{2.4, 1e6}},
      {model::Severity::kWarning, "topology", "topology"},
      {model::Severity::kWarning, "pattern", "sawtooth", model::FindingCost{64, 3e7}},
      {model::Severity::kInfo, "stragglers", "small", model::FindingCost{0.5, 1e5}},
      {model::Severity::kWarning, "collector", "lost records"},
      {model::Severity::kWarning, "overlap", "overlap", model::FindingCost{7, 3e6}},
      {model::Severity::kCritical, "hang", "hang"}};
  const std::vector<std::string> want = {"hang",      "lost records", "sawtooth", "overlap",
                                         "straggler", "topology",     "small"};
  std::vector<std::string> got;
  for (const model::Finding* f : model::ordered_findings(r.findings)) got.push_back(f->text);
  EXPECT_EQ(got, want);
  TextOptions o;
  o.footer = false;
  std::string expect;
  for (const model::Finding* f : model::ordered_findings(r.findings)) {
    const char* tag = f->severity == model::Severity::kCritical  ? "CRITICAL"
                      : f->severity == model::Severity::kWarning ? "WARNING "
                                                                 : "info    ";
    expect += std::string(tag) + " [" + f->source + "] " + f->text + "\n";
  }
  EXPECT_EQ(render_text(r, o), expect);
  const nlohmann::json j = render_json(r);
  ASSERT_EQ(j["findings"].size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(j["findings"][i]["text"], want[i]);
  EXPECT_EQ(j["findings"][2]["cost_pct"], 64.0);
  EXPECT_EQ(j["findings"][2]["cost_us_per_step"], 30000.0);
  EXPECT_TRUE(j["findings"][1]["cost_pct"].is_null());
}

TEST(TextRenderer, LongFindingListsAreCut) {
  model::Report r;
  for (int i = 0; i < 30; ++i)
    r.findings.push_back({model::Severity::kWarning, "x", std::to_string(i)});
  TextOptions o;
  o.max_findings = 5;
  std::string t = render_text(r, o);
  EXPECT_NE(t.find("... 25 more findings in the JSON report"), std::string::npos);
  EXPECT_EQ(render_text(model::Report{}), "no findings\n");
}

TEST(TextRenderer, AFindingsChartIsOneLineUnderIt) {
  model::Report r;
  r.findings = {{model::Severity::kWarning, "pattern", "sawtooth"}};
  r.findings[0].chart = {1.0f, 1.0f, 0.5f, 0.0f, 0.9f};
  r.findings[0].chart_label = "compute, steps 2-5:";
  TextOptions o;
  EXPECT_EQ(render_text(r, o),
            "WARNING  [pattern] sawtooth\n"
            "         compute, steps 2-5: |██▄ ▇|\n");
  o.unicode = false;
  EXPECT_EQ(render_text(r, o),
            "WARNING  [pattern] sawtooth\n"
            "         compute, steps 2-5: |@@+ %|\n");
}

TEST(TextRenderer, SparklineLevels) {
  EXPECT_EQ(sparkline({0.0f, 0.125f, 0.25f, 0.375f, 0.5f, 0.625f, 0.75f, 0.875f, 1.0f}, true),
            " ▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline({0.0f, 0.02f, 0.2f, 0.5f, 0.8f, 1.0f, 1.5f, -1.0f}, false), "  :+#@@ ");
}

TEST(TextRenderer, LocaleDecidesUnicode) {
  // LC_ALL wins over LC_CTYPE over LANG; nothing set is the C locale: ASCII.
  const char* names[] = {"LC_ALL", "LC_CTYPE", "LANG"};
  std::string saved[3];
  bool had[3];
  for (int i = 0; i < 3; ++i) {
    const char* v = std::getenv(names[i]);
    had[i] = v != nullptr;
    saved[i] = v ? v : "";
    unsetenv(names[i]);
  }
  EXPECT_FALSE(locale_is_utf8());
  setenv("LANG", "en_US.UTF-8", 1);
  EXPECT_TRUE(locale_is_utf8());
  setenv("LC_CTYPE", "C", 1);
  EXPECT_FALSE(locale_is_utf8());
  setenv("LC_ALL", "de_DE.utf8", 1);
  EXPECT_TRUE(locale_is_utf8());
  for (int i = 0; i < 3; ++i) {
    if (had[i])
      setenv(names[i], saved[i].c_str(), 1);
    else
      unsetenv(names[i]);
  }
}

}  // namespace ncclwatch::report

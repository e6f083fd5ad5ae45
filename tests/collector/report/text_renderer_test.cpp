#include "report/text_renderer.h"

#include <gtest/gtest.h>

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
            "\n== Overlap\nno newline\n");
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

}  // namespace ncclwatch::report

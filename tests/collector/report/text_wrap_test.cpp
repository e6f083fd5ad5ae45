#include "report/text_wrap.h"

#include <fcntl.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "report/text_renderer.h"
#include "text_lines.h"

namespace ncclwatch::report {
namespace {

using ncclwatch::test::lines_of;
using ncclwatch::test::words_of;

// $COLUMNS set to `value` (unset for nullptr) for one test, restored after.
class ColumnsEnv {
 public:
  explicit ColumnsEnv(const char* value) {
    if (const char* old = std::getenv("COLUMNS")) old_ = old, had_ = true;
    if (value != nullptr) {
      ::setenv("COLUMNS", value, 1);
    } else {
      ::unsetenv("COLUMNS");
    }
  }
  ~ColumnsEnv() {
    if (had_) {
      ::setenv("COLUMNS", old_.c_str(), 1);
    } else {
      ::unsetenv("COLUMNS");
    }
  }

 private:
  std::string old_;
  bool had_ = false;
};

const std::string kLong =
    "rank 2 (node-b) is 1.6 ms late at the 3rd all_reduce of every step, costing 1.2 ms/step "
    "(2.4% of step time) in exposed waiting — slow GPU (clocks, thermals, a noisy neighbour?): "
    "its compute takes 5.1 ms/step vs 3.9 ms/step on its peers";

TEST(TextWrap, LinesFitTheWidthAndKeepEveryWordInOrder) {
  const std::string head = "WARNING  [stragglers] ";
  for (std::size_t width : {40u, 60u, 80u, 100u}) {
    const std::string out = wrap(head, kLong, width, "         ");
    const std::vector<std::string> lines = lines_of(out);
    ASSERT_GT(lines.size(), 1u) << out;
    EXPECT_EQ(lines[0].rfind(head, 0), 0u) << out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      EXPECT_LE(columns(lines[i]), width) << "line " << i << " of\n" << out;
      if (i > 0) {
        EXPECT_EQ(lines[i].rfind("         ", 0), 0u) << out;
        EXPECT_NE(lines[i][9], ' ') << out;  // the indent, then a word
      }
    }
    EXPECT_EQ(words_of(out), words_of(head + kLong)) << out;
    EXPECT_EQ(out.back(), '\n');
  }
}

TEST(TextWrap, ColumnsCountCodePointsNotBytes) {
  EXPECT_EQ(columns("a — σ µs"), 8u);
  // 40 columns of "—" (120 bytes) fit a 40-column line.
  std::string dashes;
  for (int i = 0; i < 19; ++i) dashes += "—— ";
  const std::string out = wrap("", dashes, 40, "  ");
  for (const std::string& line : lines_of(out)) EXPECT_LE(columns(line), 40u) << out;
  EXPECT_EQ(lines_of(out).size(), 2u) << out;
}

TEST(TextWrap, AWordLongerThanALineStaysWholeOnItsOwnLine) {
  const std::string path = "/very/long/path/" + std::string(80, 'x') + "/trace.json";
  const std::string out =
      wrap("info     [trace] ", "timeline written to " + path + " (open it)", 60, "         ");
  const std::vector<std::string> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0], "info     [trace] timeline written to");
  EXPECT_EQ(lines[1], "         " + path);
  EXPECT_EQ(lines[2], "         (open it)");
}

TEST(TextWrap, WidthZeroIsTheTextAsItIs) {
  EXPECT_EQ(wrap("h ", "a  b   ", 0, "  "), "h a  b   \n");
}

TEST(TextWrap, ProseLinesWrapTablesDoNot) {
  const std::string table_row =
      "     0 vm                  0    18399        20        20       0  host-only           0";
  EXPECT_EQ(wrap_prose_line(table_row, 40), table_row + "\n");
  EXPECT_EQ(wrap_prose_line("short prose", 40), "short prose\n");
  const std::string out = wrap_prose_line("  " + kLong, 50);
  const std::vector<std::string> lines = lines_of(out);
  ASSERT_GT(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("  rank 2", 0), 0u) << out;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind("    ", 0), 0u) << out;  // its own indent + 2
    EXPECT_LE(columns(lines[i]), 50u) << out;
  }
  EXPECT_EQ(words_of(out), words_of(kLong));
}

TEST(TextWrap, TheWidthIsColumnsElseTheTerminalsElseAHundred) {
  {
    ColumnsEnv env("72");
    EXPECT_EQ(output_width(stdout), 72u);
  }
  {
    ColumnsEnv env("12");  // too narrow to help: the minimum
    EXPECT_EQ(output_width(stdout), kMinWidth);
  }
  for (const char* junk : {"", "abc", "-5", "80x"}) {
    ColumnsEnv env(junk);
    std::FILE* file = std::tmpfile();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(output_width(file), kDefaultWidth) << "COLUMNS='" << junk << "'";
    std::fclose(file);
  }
  // A terminal: its width.
  ColumnsEnv env(nullptr);
  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_row = 30;
  ws.ws_col = 132;
  if (::openpty(&master, &slave, nullptr, nullptr, &ws) != 0) {
    GTEST_SKIP() << "no pseudo-terminal here";
  }
  std::FILE* tty = ::fdopen(slave, "w");
  ASSERT_NE(tty, nullptr);
  EXPECT_EQ(output_width(tty), 132u);
  ws.ws_col = 57;
  ASSERT_EQ(::ioctl(slave, TIOCSWINSZ, &ws), 0);
  EXPECT_EQ(output_width(tty), 57u);
  std::fclose(tty);
  ::close(master);
}

TEST(TextRenderer, FindingsAndProseAreWrappedTablesAndJsonTextAreNot) {
  model::Report r;
  r.findings = {{model::Severity::kWarning, "stragglers", kLong},
                {model::Severity::kInfo, "collector", "short"}};
  const std::string table =
      "  rank host      instances   last%\n     0 vm               20   50.0%\n";
  r.sections = {{"Stragglers", kLong + "\n\n" + table}};
  TextOptions o;
  o.width = 60;
  const std::string text = render_text(r, o);
  for (const std::string& line : lines_of(text)) EXPECT_LE(columns(line), 60u) << text;
  EXPECT_NE(text.find(table), std::string::npos) << text;
  EXPECT_NE(text.find("\ninfo     [collector] short\n"), std::string::npos) << text;
  EXPECT_EQ(text.rfind("WARNING  [stragglers] rank 2 (node-b) is 1.6 ms late", 0), 0u) << text;
  // The model (and so the JSON) keeps the whole text; unwrapped rendering is unchanged.
  EXPECT_EQ(r.findings[0].text, kLong);
  EXPECT_NE(render_text(r).find("WARNING  [stragglers] " + kLong + "\n"), std::string::npos);
}

TEST(TextRenderer, ASectionWithNothingUnderItHasNoHeading) {
  model::Report r;
  r.sections = {{"Empty", ""}, {"Blank", "\n  \n"}, {"Ranks", "table\n"}};
  TextOptions o;
  o.footer = false;  // the glossary line is not a section
  EXPECT_EQ(render_text(r, o), "no findings\n\n== Ranks\ntable\n");
}

}  // namespace
}  // namespace ncclwatch::report

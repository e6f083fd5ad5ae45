// The text report as a terminal user reads it: findings and prose wrapped to the width ($COLUMNS,
// else the terminal's, else 100) with the whole texts in the JSON; NCCL's own WARN lines first.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "text_lines.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::cli_test::Cli;
using ncclwatch::cli_test::Result;

using ncclwatch::test::lines_of;
using ncclwatch::test::words_of;

// Columns of a UTF-8 line (one per code point).
std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

// A table row or aligned text: a run of two spaces after the indentation (left unwrapped).
bool aligned(const std::string& line) {
  const std::size_t indent = line.find_first_not_of(' ');
  return indent != std::string::npos && line.find("  ", indent) != std::string::npos;
}

class CliReportText : public Cli {
 protected:
  // The findings' lines: from the top of the report to the first blank line.
  static std::string findings_block(const std::string& report) {
    return report.substr(0, report.find("\n\n") + 1);
  }
  // Every line that is not a table row fits `width` (or is one word too long to break).
  static void expect_fits(const std::string& report, std::size_t width) {
    for (const std::string& line : lines_of(report)) {
      if (aligned(line) || words_of(line).size() == 1) continue;
      EXPECT_LE(columns(line), width) << "line: " << line << "\nof:\n" << report;
    }
  }
};

TEST_F(CliReportText, FindingsAndProseFitTheWidthAndTheJsonHasTheWholeText) {
  const fs::path dir = root_ / "job";
  const std::string job = unique_job("wrap");
  record_job(dir, job);
  const fs::path json = root_ / "r.json";
  Result narrow = shell("COLUMNS=60 " + std::string(NCCLWATCH_CLI) + " report --no-progress " +
                        dir.string() + " --json " + json.string());
  ASSERT_EQ(narrow.rc, findings_status(narrow.out)) << narrow.err;
  expect_fits(narrow.out, 60);
  // The JSON keeps each finding whole, and the text holds the same words in the same order.
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  std::string joined;
  std::size_t longest = 0;
  for (const auto& f : report["findings"]) {
    const std::string text = f["text"].get<std::string>();
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    longest = std::max(longest, columns(text));
    joined += " " + text;
  }
  EXPECT_GT(longest, 60u) << "nothing to wrap: the test proves nothing";
  std::vector<std::string> text_words;
  for (const std::string& line : lines_of(findings_block(narrow.out))) {
    std::vector<std::string> w = words_of(line.substr(line.find(']') + 1));
    if (line.rfind(' ', 0) == 0) w = words_of(line);  // a continuation line
    text_words.insert(text_words.end(), w.begin(), w.end());
  }
  EXPECT_EQ(text_words, words_of(joined)) << narrow.out;

  // Not a terminal and no $COLUMNS: 100.
  Result plain = shell("env -u COLUMNS " + std::string(NCCLWATCH_CLI) + " report --no-progress " +
                       dir.string());
  ASSERT_EQ(plain.rc, findings_status(plain.out)) << plain.err;
  expect_fits(plain.out, 100);
  EXPECT_NE(plain.out, narrow.out);
}

// A recorded job's trace directory with NCCL debug logs holding WARN lines (tests/collector/
// topology/data/warn, their host and pid those of the job's ranks): the report opens with them,
// rank and host named, and the JSON has every group.
TEST_F(CliReportText, NcclWarnLinesOpenTheReport) {
  const fs::path dir = root_ / "job";
  record_job(dir, unique_job("warn"));
  const fs::path json = root_ / "r.json";
  Result first = cli("report --no-progress " + dir.string() + " --json " + json.string());
  ASSERT_EQ(first.rc, findings_status(first.out)) << first.err;
  nlohmann::json report;
  {
    std::ifstream in(json);
    report = nlohmann::json::parse(in);
  }
  ASSERT_EQ(report["ranks"].size(), 2u);
  // The logs as NCCL would have named and written them for these two processes.
  for (const auto& [rank, name, prefix] :
       {std::tuple{0, "nccl-debug.gpu-a.4101.log", "gpu-a:4101:"},
        std::tuple{1, "nccl-debug.gpu-b.4202.log", "gpu-b:4202:"}}) {
    const std::string host = report["ranks"][rank]["host"].get<std::string>();
    const std::string pid = std::to_string(report["ranks"][rank]["pid"].get<int64_t>());
    std::ifstream in(std::string(NCCL_WARN_DATA) + "/" + name);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << name;
    const std::string nccl_host = host.substr(0, host.find('.'));
    for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at))
      text.replace(at, std::string(prefix).size(), nccl_host + ":" + pid + ":");
    std::ofstream(dir / ("nccl-debug." + nccl_host + "." + pid + ".log")) << text;
  }
  Result r = cli("report --no-progress " + dir.string() + " --json " + json.string());
  EXPECT_EQ(r.rc, 3) << r.err;
  const std::string host0 = report["ranks"][0]["host"].get<std::string>();
  const std::string host1 = report["ranks"][1]["host"].get<std::string>();
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0].rfind("WARNING  [nccl] rank 0 (" + host0.substr(0, host0.find('.')) +
                               "): NCCL WARN NET/IB : Got completion from peer",
                           0),
            0u)
      << r.out;
  EXPECT_TRUE(has(r.out, "\nWARNING  [nccl] rank 1 (" + host1.substr(0, host1.find('.')) +
                             "): NCCL WARN socketProgress: Connection closed"))
      << r.out;
  EXPECT_TRUE(has(r.out, "\nWARNING  [nccl] and 1 more distinct NCCL WARN line(s)")) << r.out;
  EXPECT_TRUE(has(r.out, "\n== NCCL warnings\n6 WARN line(s) from NCCL, 4 distinct")) << r.out;
  std::ifstream in(json);
  const nlohmann::json with = nlohmann::json::parse(in);
  EXPECT_EQ(with["nccl_warnings"]["lines"], 6);
  EXPECT_EQ(with["nccl_warnings"]["groups"][0]["ranks"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(with["findings"][0]["source"], "nccl");
}

}  // namespace

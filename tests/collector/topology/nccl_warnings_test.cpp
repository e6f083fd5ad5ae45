// NCCL's WARN lines: read in every form NCCL prints them, grouped (numbers aside), tied to the
// job's ranks, and put first in the report, in its section and JSON; `ncclwatch run`'s echo.
#include "topology/nccl_warnings.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "topology/log_line.h"
#include "topology/log_parser.h"
#include "topology/nccl_warning_report.h"
#include "topology/topology_report.h"

namespace ncclwatch::topology {
namespace {

namespace fs = std::filesystem;

const std::string kData = std::string(TOPOLOGY_DATA_DIR) + "/warn";

TEST(NcclWarnLine, EveryFormNcclPrints) {
  struct Case {
    const char* line;
    const char* host;
    int64_t pid;
    int dev;
    const char* site;
    const char* message;
  };
  const Case cases[] = {
      {"gpu-a:4101:4135 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
       "10.1.0.12<51224> with error 12",
       "gpu-a", 4101, 0, "transport/net_ib.cc:1295",
       "NET/IB : Got completion from peer 10.1.0.12<51224> with error 12"},
      // 2.26+: a time stamp in front.
      {"[2026-03-02 14:07:32] gpu-b:4202:4202 [3] include/alloc.h:125 NCCL WARN Cuda failure 'out "
       "of memory'",
       "gpu-b", 4202, 3, "include/alloc.h:125", "Cuda failure 'out of memory'"},
      // A launcher's prefix.
      {"[1,1]<stdout>:gpu-b:4202:4250 [0] proxy.cc:1632 NCCL WARN [Service thread] Accept failed",
       "gpu-b", 4202, 0, "proxy.cc:1632", "[Service thread] Accept failed"},
      // Old forms without the source location.
      {"node7:77:78 [1] NCCL WARN Error : ring 0 does not loop back to start", "node7", 77, 1, "",
       "Error : ring 0 does not loop back to start"},
  };
  for (const Case& c : cases) {
    const ParsedLine p = parse_log_line(c.line);
    ASSERT_EQ(p.kind, LineKind::kWarn) << c.line;
    EXPECT_TRUE(p.prefix.ok) << c.line;
    EXPECT_EQ(p.prefix.host, c.host) << c.line;
    EXPECT_EQ(p.prefix.pid, c.pid) << c.line;
    EXPECT_EQ(p.prefix.dev, c.dev) << c.line;
    EXPECT_EQ(p.site, c.site) << c.line;
    EXPECT_EQ(p.message, c.message) << c.line;
  }
  // Someone quoting NCCL (a Python traceback, a shell echo) is not NCCL's line.
  EXPECT_EQ(parse_log_line("RuntimeError: NCCL WARN Cuda failure").kind, LineKind::kNotNccl);
  // The INFO lines that unwind an error stay INFO lines.
  EXPECT_NE(parse_log_line("gpu-a:4101:4135 [0] NCCL INFO proxy.cc:679 -> 6").kind,
            LineKind::kWarn);
}

TEST(NcclWarnings, LinesAlikeButForTheirNumbersAreOneGroup) {
  EXPECT_EQ(masked("peer 10.1.0.12<51224> error 12, comm 0x7f3a2c0ab"),
            "peer #.#.#.#<#> error #, comm #");
  LogParser parser;
  parser.add_file(kData + "/nccl-debug.gpu-a.4101.log");
  parser.add_file(kData + "/nccl-debug.gpu-b.4202.log");
  const LogSet set = parser.take();
  const NcclWarnings& w = set.warnings;
  EXPECT_EQ(w.lines, 6u);
  EXPECT_EQ(set.stats.warn_lines, 6u);
  ASSERT_EQ(w.groups.size(), 4u);
  const WarnGroup& ib = w.groups[0];
  EXPECT_EQ(ib.count, 3u);
  EXPECT_EQ(ib.first.host, "gpu-a");
  EXPECT_EQ(ib.first.pid, 4101);
  EXPECT_EQ(ib.first.site, "transport/net_ib.cc:1295");
  ASSERT_EQ(ib.processes.size(), 2u);
  EXPECT_EQ(ib.processes[1], (std::pair<std::string, int64_t>{"gpu-b", 4202}));
  EXPECT_EQ(w.groups[1].first.message,
            "socketProgress: Connection closed by remote peer gpu-a.cluster.local<45074>");
  EXPECT_EQ(w.groups[2].first.message, "Cuda failure 'out of memory'");
  EXPECT_EQ(w.groups[3].first.site, "proxy.cc:1632");
  // The topology check still reads the INFO lines around them.
  EXPECT_EQ(set.ranks.size(), 2u);
}

TEST(NcclWarnings, BoundedWhateverTheLogHolds) {
  NcclWarnings w;
  for (std::size_t i = 0; i < NcclWarnings::kMaxGroups + 50; ++i) {
    // Distinct words, not numbers: a new group each.
    std::string word;
    for (std::size_t k = i; k > 0 || word.empty(); k /= 26) word += static_cast<char>('a' + k % 26);
    w.add("f", "h", 1, 0, "x.cc:1", "failure " + word, "raw");
  }
  EXPECT_EQ(w.groups.size(), NcclWarnings::kMaxGroups);
  EXPECT_EQ(w.ungrouped, 50u);
  EXPECT_EQ(w.lines, NcclWarnings::kMaxGroups + 50);
  NcclWarnings many;
  for (int64_t pid = 0; pid < static_cast<int64_t>(NcclWarnings::kMaxProcesses) + 10; ++pid)
    many.add("f", "h", pid, 0, "x.cc:1", "same", std::string(100000, 'y'));
  ASSERT_EQ(many.groups.size(), 1u);
  EXPECT_EQ(many.groups[0].processes.size(), NcclWarnings::kMaxProcesses);
  EXPECT_TRUE(many.groups[0].more_processes);
  EXPECT_EQ(many.groups[0].first.line.size(), NcclWarnings::kMaxMessageBytes);
}

model::JobTrace two_rank_job() {
  model::JobTrace job;
  for (const auto& [rank, host, pid] :
       {std::tuple{0, "gpu-a.cluster.local", 4101}, std::tuple{1, "gpu-b.cluster.local", 4202}}) {
    model::RankTrace r;
    r.info.rank = rank;
    r.info.world_size = 2;
    r.info.host = host;
    r.info.pid = pid;
    job.ranks.push_back(std::move(r));
  }
  return job;
}

TEST(NcclWarningReport, FirstInTheReportWithRankHostAndTheLine) {
  model::Report report;
  report.findings.push_back({model::Severity::kWarning, "stragglers", "rank 1 is late"});
  const bool recognised =
      add_to_report({kData + "/nccl-debug.gpu-a.4101.log", kData + "/nccl-debug.gpu-b.4202.log"},
                    two_rank_job(), model::MatchResult{}, report);
  EXPECT_TRUE(recognised);
  ASSERT_GE(report.findings.size(), 5u);
  const model::Finding& first = report.findings[0];
  EXPECT_EQ(first.severity, model::Severity::kWarning);
  EXPECT_EQ(first.source, "nccl");
  EXPECT_EQ(first.text,
            "rank 0 (gpu-a): NCCL WARN NET/IB : Got completion from peer 10.1.0.12<51224> with "
            "error 12, opcode 0, len 0, vendor err 129 (Recv) [transport/net_ib.cc:1295] — 3 "
            "such lines from ranks 0,1");
  EXPECT_EQ(report.findings[1].text,
            "rank 1 (gpu-b): NCCL WARN socketProgress: Connection closed by remote peer "
            "gpu-a.cluster.local<45074> [misc/socket.cc:50]");
  EXPECT_EQ(report.findings[2].text,
            "rank 1 (gpu-b): NCCL WARN Cuda failure 'out of memory' [include/alloc.h:125]");
  EXPECT_EQ(report.findings[3].text,
            "and 1 more distinct NCCL WARN line(s) (6 lines in all): section 'NCCL warnings', "
            "JSON nccl_warnings");
  EXPECT_EQ(report.findings[4].text, "rank 1 is late");

  const model::Section& section = report.sections.back();
  EXPECT_EQ(section.title, "NCCL warnings");
  EXPECT_NE(section.body.find("6 WARN line(s) from NCCL, 4 distinct"), std::string::npos)
      << section.body;
  EXPECT_NE(section.body.find("  rank 1 (gpu-b): [Service thread] Accept failed Resource "
                              "temporarily unavailable [proxy.cc:1632]\n"),
            std::string::npos)
      << section.body;

  const nlohmann::json& j = report.json["nccl_warnings"];
  EXPECT_EQ(j["lines"], 6);
  EXPECT_EQ(j["distinct"], 4);
  ASSERT_EQ(j["groups"].size(), 4u);
  EXPECT_EQ(j["groups"][0]["count"], 3);
  EXPECT_EQ(j["groups"][0]["ranks"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(j["groups"][0]["first"]["rank"], 0);
  EXPECT_EQ(j["groups"][0]["first"]["host"], "gpu-a");
  EXPECT_EQ(j["groups"][3]["line"],
            "[1,1]<stdout>:gpu-b:4202:4250 [0] proxy.cc:1632 NCCL WARN [Service thread] Accept "
            "failed Resource temporarily unavailable");
  EXPECT_EQ(report.json["topology"]["parse"]["warn_lines"], 6);
}

TEST(NcclWarningReport, ProcessesOutsideTheJobAreNamedByHostAndPid) {
  model::Report report;
  add_to_report({kData + "/nccl-debug.gpu-b.4202.log"}, model::JobTrace{}, model::MatchResult{},
                report);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].text.rfind("gpu-b pid 4202: NCCL WARN NET/IB", 0), 0u)
      << report.findings[0].text;
  EXPECT_TRUE(report.json["nccl_warnings"]["groups"][0]["first"]["rank"].is_null());
  EXPECT_EQ(report.json["nccl_warnings"]["groups"][0]["other_processes"][0]["pid"], 4202);
}

TEST(NcclWarningReport, NoWarnLineNoFindingNoSection) {
  model::Report report;
  add_to_report({std::string(TOPOLOGY_DATA_DIR) + "/real/nccl-issue1412-2.19-2node.log"},
                model::JobTrace{}, model::MatchResult{}, report);
  for (const auto& f : report.findings) EXPECT_NE(f.source, "nccl") << f.text;
  for (const auto& s : report.sections) EXPECT_NE(s.title, "NCCL warnings");
  EXPECT_FALSE(report.json.contains("nccl_warnings"));
}

TEST(NcclWarningReport, AWarnOnlyLogIsRecognisedButNotATopology) {
  const fs::path dir = fs::temp_directory_path() / ("nw_warn_only_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "job.log") << "\nnode7:77:78 [1] misc/socket.cc:484 NCCL WARN socketStart"
                                    "Connect: Connect to 10.0.0.2<34567> failed : Connection "
                                    "refused\n";
  ASSERT_EQ(find_logs(dir.string()).size(), 1u);  // a *.log holding an NCCL WARN line
  model::Report report;
  EXPECT_TRUE(
      add_to_report(find_logs(dir.string()), model::JobTrace{}, model::MatchResult{}, report));
  const std::string& topology = report.sections.front().body;
  EXPECT_NE(topology.find("NCCL WARN lines only"), std::string::npos) << topology;
  EXPECT_EQ(topology.find("no topology problem found"), std::string::npos) << topology;
  EXPECT_EQ(report.findings.front().source, "nccl");
  fs::remove_all(dir);
}

TEST(CapturedWarningLines, TheShimsCapturedLogsOfThisRunOnly) {
  const fs::path dir = fs::temp_directory_path() / ("nw_capture_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kData + "/nccl-debug.gpu-a.4101.log", dir / "nccl-debug.gpu-a.4101.log");
  fs::copy_file(kData + "/nccl-debug.gpu-b.4202.log", dir / "user-own.log");  // not captured
  fs::create_symlink(kData + "/nccl-debug.gpu-b.4202.log", dir / "nccl-debug.planted.1.log");
  const auto before = std::chrono::system_clock::now() - std::chrono::seconds(5);
  const std::vector<std::string> lines = captured_warning_lines(dir.string(), before);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "NCCL wrote 2 WARN line(s), 1 distinct, to its debug logs in " +
                          dir.string() + " (nccl-debug.*):");
  EXPECT_EQ(lines[1],
            "  gpu-a:4101:4135 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion "
            "from peer 10.1.0.12<51224> with error 12, opcode 0, len 0, vendor err 129 (Recv) (2 "
            "such lines from 1 process)");
  // A log from before the run (a directory used again) is another run's.
  const auto later = std::chrono::system_clock::now() + std::chrono::seconds(30);
  EXPECT_TRUE(captured_warning_lines(dir.string(), later).empty());
  EXPECT_TRUE(captured_warning_lines((dir / "missing").string(), before).empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ncclwatch::topology

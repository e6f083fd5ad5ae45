// Whole jobs' logs in every version's forms: healthy ones of 1, 2 and 4 nodes give no finding;
// each misconfiguration gives its finding, named, with the comm, ranks and evidence line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "log_builder.h"
#include "topology/checks.h"
#include "topology/log_parser.h"
#include "topology/topology_report.h"

namespace ncclwatch::topology {
namespace {

using testing::JobSpec;
using testing::LogBuilder;
using testing::Style;

std::vector<TopoFinding> analyze(const JobSpec& spec, LogSet* keep = nullptr) {
  LogParser parser;
  for (const auto& [name, text] : LogBuilder(spec).build()) parser.add_text(name, text);
  LogSet set = parser.take();
  auto groups = group_comms(set);
  model::JobTrace job;
  model::MatchResult match;
  auto comms = build_contexts(set, groups, job, match);
  std::vector<TopoFinding> out;
  check_node_count(set, comms, out);
  check_transports(set, comms, out);
  check_rings(set, comms, out);
  check_agreement(set, comms, out);
  EXPECT_EQ(set.stats.malformed, 0u);
  if (keep != nullptr) *keep = std::move(set);
  return out;
}

std::string kinds(const std::vector<TopoFinding>& f) {
  std::string s;
  for (const auto& x : f) s += x.kind + "(" + x.message + ") ";
  return s;
}

const TopoFinding* find(const std::vector<TopoFinding>& f, const std::string& kind) {
  for (const auto& x : f)
    if (x.kind == kind) return &x;
  return nullptr;
}

const Style kAll[] = {Style::k2_4,  Style::k2_5,  Style::k2_7,
                      Style::k2_12, Style::k2_19, Style::k2_28};
const Style kWithNnodes[] = {Style::k2_19, Style::k2_28};

class EveryStyle : public ::testing::TestWithParam<Style> {};

TEST_P(EveryStyle, HealthyJobsOfOneTwoAndFourNodesHaveNoFinding) {
  for (int nodes : {1, 2, 4}) {
    for (int gpus : {1, 2, 8}) {
      JobSpec s;
      s.style = GetParam();
      s.nodes = nodes;
      s.gpus = gpus;
      s.nics = gpus;
      s.channels = std::max(4, gpus);  // NCCL uses at least one channel per NIC
      s.extra_comms = nodes > 1 ? 1 : 0;
      SCOPED_TRACE("nodes " + std::to_string(nodes) + " gpus " + std::to_string(gpus));
      LogSet set;
      auto f = analyze(s, &set);
      EXPECT_TRUE(f.empty()) << kinds(f);
      EXPECT_GT(set.stats.used, 0u);
    }
  }
  // Fewer NICs than GPUs, but not starved: two GPUs per NIC is a common, sound design.
  JobSpec s;
  s.style = GetParam();
  s.gpus = 4;
  s.nics = 2;
  auto f = analyze(s);
  EXPECT_TRUE(f.empty()) << kinds(f);
}

TEST_P(EveryStyle, ShmBetweenGpusOfOneNode) {
  JobSpec s;
  s.style = GetParam();
  s.intra = "SHM/direct/direct";
  auto f = analyze(s);
  const TopoFinding* x = find(f, "intra-node-not-p2p");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_EQ(x->severity, model::Severity::kWarning);
  EXPECT_NE(x->evidence.find("via SHM/direct/direct"), std::string::npos);
  EXPECT_NE(x->message.find("SHM"), std::string::npos);
  EXPECT_FALSE(x->ranks.empty());
  EXPECT_NE(x->advice.find("NCCL_P2P"), std::string::npos);
}

TEST_P(EveryStyle, NetworkBetweenGpusOfOneNode) {
  JobSpec s;
  s.style = GetParam();
  s.intra = "NET/IB/0/GDRDMA";
  auto f = analyze(s);
  const TopoFinding* x = find(f, "intra-node-not-p2p");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_EQ(x->severity, model::Severity::kCritical);
  EXPECT_NE(x->evidence.find("via NET/IB/0"), std::string::npos);
}

TEST_P(EveryStyle, Sockets) {
  JobSpec s;
  s.style = GetParam();
  s.net = "Socket";
  auto f = analyze(s);
  const TopoFinding* x = find(f, "net-socket");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_NE(x->evidence.find("NET/Socket"), std::string::npos);
  EXPECT_NE(x->advice.find("NCCL_SOCKET_IFNAME"), std::string::npos);
  EXPECT_NE(x->advice.find("NCCL_IB_HCA"), std::string::npos);
  EXPECT_EQ(find(f, "intra-node-not-p2p"), nullptr);
}

TEST_P(EveryStyle, AllGpusOnOneNic) {
  JobSpec s;
  s.style = GetParam();
  s.gpus = 8;
  s.nics = 8;
  s.one_nic = true;
  auto f = analyze(s);
  const TopoFinding* x = find(f, "nic-bottleneck");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_NE(x->message.find("8 GPUs reach other nodes through 1 of its 8 NICs"), std::string::npos)
      << x->message;
  EXPECT_NE(x->advice.find("NCCL_IB_HCA"), std::string::npos);
}

TEST_P(EveryStyle, InterleavedRingCrossesNodesTooOften) {
  JobSpec s;
  s.style = GetParam();
  s.nodes = 2;
  s.gpus = 4;
  s.interleaved_ring = true;
  auto f = analyze(s);
  const TopoFinding* x = find(f, "ring-extra-crossings");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_NE(x->message.find("up to 8 times where 2 would do"), std::string::npos) << x->message;
  EXPECT_NE(x->evidence.find("Channel 00/02"), std::string::npos);
}

TEST_P(EveryStyle, NodeWithFewerChannels) {
  JobSpec s;
  s.style = GetParam();
  s.nodes = 2;
  s.channels = 4;
  s.odd_channels_node = 1;
  auto f = analyze(s);
  const TopoFinding* x = find(f, "rank-disagreement");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_EQ(x->ranks, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_NE(x->message.find("tree channels: 2 on rank(s) 4-7 vs 4 on rank(s) 0-3"),
            std::string::npos)
      << x->message;
  // The evidence is the odd rank's own line: its channel count or its trees.
  EXPECT_TRUE(x->evidence.rfind("node1: 2 coll channels", 0) == 0 ||
              x->evidence.rfind("node1: Trees [0]", 0) == 0)
      << x->evidence;
}

TEST_P(EveryStyle, NodesThatNeverJoined) {
  JobSpec s;
  s.style = GetParam();
  s.nodes = 2;
  s.gpus = 4;
  s.separate_jobs = true;
  auto f = analyze(s);
  const TopoFinding* x = find(f, "node-count-mismatch");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_EQ(x->severity, model::Severity::kCritical);
  EXPECT_NE(x->message.find("never joined"), std::string::npos) << x->message;
  EXPECT_NE(x->advice.find("MASTER_ADDR"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Versions, EveryStyle, ::testing::ValuesIn(kAll));

class NnodesStyle : public ::testing::TestWithParam<Style> {};

TEST_P(NnodesStyle, DuplicateHostNames) {
  JobSpec s;
  s.style = GetParam();
  s.nodes = 2;
  s.same_host = "localhost";
  auto f = analyze(s);
  const TopoFinding* x = find(f, "node-count-mismatch");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_NE(x->message.find("NCCL counts 2 node(s) in a 8-rank comm, the ranks' host names say 1"),
            std::string::npos)
      << x->message;
  // With host names that lie, the host-based checks stay quiet rather than guess.
  EXPECT_EQ(find(f, "intra-node-not-p2p"), nullptr) << kinds(f);
  EXPECT_EQ(find(f, "ring-extra-crossings"), nullptr) << kinds(f);
}

TEST_P(NnodesStyle, NcclSeesFewerNodesThanHosts) {
  JobSpec s;
  s.style = GetParam();
  s.nodes = 2;
  s.nnodes_override = 1;
  auto f = analyze(s);
  const TopoFinding* x = find(f, "node-count-mismatch");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_EQ(x->severity, model::Severity::kCritical);
  EXPECT_NE(x->advice.find("NCCL_HOSTID"), std::string::npos);
}

TEST_P(NnodesStyle, TruncatedRingsAreRebuiltFromNeighbours) {
  JobSpec s;
  s.style = GetParam();
  s.nodes = 4;
  s.gpus = 4;
  s.interleaved_ring = true;
  s.truncate_rings = true;
  LogSet set;
  auto f = analyze(s, &set);
  bool any_truncated = false;
  for (const auto& r : set.ranks)
    for (const auto& o : r.rings) any_truncated = any_truncated || o.truncated;
  EXPECT_TRUE(any_truncated);
  const TopoFinding* x = find(f, "ring-extra-crossings");
  ASSERT_NE(x, nullptr) << kinds(f);
  EXPECT_NE(x->evidence.find("rebuilt"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Versions, NnodesStyle, ::testing::ValuesIn(kWithNnodes));

TEST(Scenario, TruncatedLogsAreCountedNotFatal) {
  JobSpec s;
  auto files = LogBuilder(s).build();
  LogParser parser;
  for (auto& [name, text] : files) {
    // Cut every file mid-line, and add garbage.
    parser.add_text(
        name,
        text.substr(0, text.size() * 2 / 3) +
            "\n\x01\x02 NCCL INFO \xff\xfe\nnode0:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[");
  }
  LogSet set = parser.take();
  EXPECT_GT(set.stats.malformed, 0u);
  EXPECT_GT(set.stats.unknown, 0u);
  EXPECT_FALSE(set.ranks.empty());
}

TEST(Scenario, CliPathFindsLogsInADirectoryAndWritesTheReport) {
  auto dir =
      std::filesystem::temp_directory_path() / ("ncclwatch-topo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  JobSpec s;
  s.net = "Socket";
  for (const auto& [name, text] : LogBuilder(s).build()) std::ofstream(dir / name) << text;
  std::ofstream(dir / "train.out")
      << "step 1\nnode9:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n";
  std::ofstream(dir / "unrelated.log") << "nothing to see\n";
  auto logs = find_logs(dir.string());
  EXPECT_EQ(logs.size(), 9u);  // 8 rank logs + train.out
  model::Report report;
  add_to_report(logs, model::JobTrace{}, model::MatchResult{}, report);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(report.sections.size(), 1u);
  EXPECT_EQ(report.sections[0].title, "Topology");
  const auto& j = report.json["topology"];
  std::vector<std::string> found;
  for (const auto& f : j["findings"]) {
    found.push_back(f["kind"]);
    for (const char* key : {"kind", "severity", "comm", "ranks", "message", "evidence"})
      EXPECT_TRUE(f.contains(key));
  }
  EXPECT_NE(std::find(found.begin(), found.end(), "net-socket"), found.end());
  EXPECT_NE(std::find(found.begin(), found.end(), "intra-node-not-p2p"), found.end());
  EXPECT_EQ(j["parse"]["files"], 9);
  EXPECT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].source, "topology");
}

TEST(Scenario, SettingsAndDriverVersionGoToTheJson) {
  auto dir =
      std::filesystem::temp_directory_path() / ("ncclwatch-topo-env-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "nccl-debug.a.1.log")
      << "node1:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n"
         "node1:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Tree\n"
         "node1:1:1 [0] NCCL INFO cudaDriverVersion 12020\n"
         "node1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n";
  std::ofstream(dir / "nccl-debug.b.2.log")
      << "node2:2:2 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
         "node2:2:2 [0] NCCL INFO NCCL_ALGO set by environment to Tree\n";
  model::Report report;
  add_to_report(find_logs(dir.string()), model::JobTrace{}, model::MatchResult{}, report);
  std::filesystem::remove_all(dir);
  const auto& env = report.json["topology"]["environment"];
  EXPECT_EQ(env["nccl_settings"]["NCCL_SOCKET_IFNAME"], nlohmann::json({"eth0"}));
  EXPECT_EQ(env["nccl_settings"]["NCCL_ALGO"], nlohmann::json({"Tree", "Ring"}));
  EXPECT_EQ(env["cuda_driver_versions"], nlohmann::json({"12.2"}));
  EXPECT_EQ(report.json["topology"]["parse"]["versions"], nlohmann::json({"2.21.5+cuda12.4"}));
  EXPECT_NE(report.sections[0].body.find("NCCL settings: NCCL_ALGO=Tree NCCL_ALGO=Ring"),
            std::string::npos)
      << report.sections[0].body;
}

TEST(Scenario, NoLogsSaysHowToPassThem) {
  model::Report report;
  add_to_report({}, model::JobTrace{}, model::MatchResult{}, report);
  ASSERT_EQ(report.sections.size(), 1u);
  EXPECT_NE(report.sections[0].body.find("ncclwatch topo LOG"), std::string::npos);
  EXPECT_NE(report.sections[0].body.find("--nccl-log"), std::string::npos);
  EXPECT_TRUE(report.json["topology"]["findings"].empty());
  EXPECT_TRUE(find_logs("/nonexistent/dir").empty());
}

}  // namespace
}  // namespace ncclwatch::topology

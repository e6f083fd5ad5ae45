// Excerpts of real logs from public issue threads, and this project's own run on a GPU
// (data/real/README.md names each source).
#include <gtest/gtest.h>

#include "topology/checks.h"
#include "topology/log_parser.h"

namespace ncclwatch::topology {
namespace {

struct Result {
  LogSet set;
  std::vector<CommGroup> groups;
  std::vector<TopoFinding> findings;
};

Result run(const std::vector<std::string>& names) {
  LogParser parser;
  for (const auto& n : names) parser.add_file(std::string(TOPOLOGY_DATA_DIR) + "/real/" + n);
  Result r;
  r.set = parser.take();
  r.groups = group_comms(r.set);
  auto comms = build_contexts(r.set, r.groups, model::JobTrace{}, model::MatchResult{});
  check_node_count(r.set, comms, r.findings);
  check_transports(r.set, comms, r.findings);
  check_rings(r.set, comms, r.findings);
  check_agreement(r.set, comms, r.findings);
  EXPECT_TRUE(r.set.problems.empty());
  return r;
}

std::vector<std::string> kinds(const Result& r) {
  std::vector<std::string> k;
  for (const auto& f : r.findings) k.push_back(f.kind);
  return k;
}

TEST(RealLogs, Nccl219TwoNodeRingsAndComms) {
  Result r = run({"nccl-issue1412-2.19-2node.log"});
  EXPECT_EQ(r.set.stats.malformed, 0u);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].nranks, 16);
  std::size_t rings = 0;
  for (const auto& v : r.set.ranks) {
    if (v.rank == 6) {
      EXPECT_EQ(v.nnodes, 2);
    }
    for (const auto& o : v.rings) {
      ++rings;
      EXPECT_EQ(o.ranks.size(), 16u);
      EXPECT_EQ(o.nchannels, 8);
    }
    if (v.rank == 1) {
      EXPECT_EQ(v.tree_channels, 8);
    }
  }
  EXPECT_EQ(rings, 5u);
  EXPECT_TRUE(r.findings.empty());
}

TEST(RealLogs, Nccl24SocketsOverSixtyFourNodes) {
  Result r = run({"nccl-issue226-2.4-socket.log"});
  EXPECT_EQ(r.set.stats.malformed, 0u);
  EXPECT_EQ(r.set.stats.used, 10u);
  EXPECT_EQ(kinds(r), std::vector<std::string>{"net-socket"});
  EXPECT_NE(
      r.findings[0].evidence.find("ip-172-31-0-119: Ring 00 : 35 -> 34 [send] via NET/Socket/0"),
      std::string::npos);
}

TEST(RealLogs, Nccl256DualTreesAndLauncherPrefix) {
  Result r = run({"nccl-issue302-2.5.6-dual-trees.log", "nccl-issue300-2.5.6-mpirun-prefix.log"});
  EXPECT_EQ(r.set.stats.malformed, 0u);
  EXPECT_EQ(r.set.versions, std::vector<std::string>{"2.5.6+cuda10.2"});
  bool dual = false;
  for (const auto& v : r.set.ranks)
    if (v.host == "crow-ib-new-nccl-256-info-19" && v.tree_channels == 4)
      dual = v.transports.size() == 3;
  EXPECT_TRUE(dual);
  ASSERT_FALSE(r.set.nics.empty());
  EXPECT_EQ(r.set.nics[0].devices.size(), 5u);  // crow's five HCAs
  EXPECT_TRUE(r.findings.empty());
}

TEST(RealLogs, Nccl218ShmHopInsideOneNode) {
  Result r = run({"nccl-issue1027-2.18-single-node-shm.log"});
  EXPECT_EQ(kinds(r), std::vector<std::string>{"intra-node-not-p2p"});
  EXPECT_EQ(r.findings[0].ranks, (std::vector<int>{3, 4}));
  EXPECT_NE(r.findings[0].evidence.find("3[3] -> 4[4] via SHM/direct/direct"), std::string::npos);
}

// Logs pasted into issue threads often have the host field redacted ("<hostname>:924:924 [5] NCCL
// INFO ..."): such a file starts with '<' but is a log, recognised by its NCCL INFO lines.
TEST(RealLogs, RedactedHostFieldIsStillALog) {
  Result plain = run({"nccl-issue1027-2.18-single-node-shm.log"});
  Result redacted = run({"nccl-issue1027-2.18-redacted-hostname.log"});
  EXPECT_TRUE(redacted.set.topo_dumps.empty());
  EXPECT_TRUE(redacted.set.graph_dumps.empty());
  EXPECT_EQ(redacted.set.stats.nccl_lines, plain.set.stats.nccl_lines);
  EXPECT_EQ(redacted.set.stats.used, plain.set.stats.used);
  EXPECT_EQ(kinds(redacted), std::vector<std::string>{"intra-node-not-p2p"});
  ASSERT_FALSE(redacted.set.ranks.empty());
  EXPECT_EQ(redacted.set.ranks[0].host, "<hostname>");

  Result cluster = run({"nccl-issue1358-2.19-redacted-cluster-name.log"});
  Result cluster_plain = run({"nccl-issue1358-2.19-two-gpus.log"});
  EXPECT_EQ(cluster.set.stats.used, cluster_plain.set.stats.used);
  EXPECT_GT(cluster.set.stats.used, 0u);
  EXPECT_EQ(cluster.groups.size(), cluster_plain.groups.size());
  EXPECT_TRUE(cluster.findings.empty());
}

// The same text handed over in memory (add_text) is told apart the same way.
TEST(RealLogs, RedactedLogTextIsNotXml) {
  LogParser parser;
  parser.add_text("pasted.log",
                  "<hostname>:924:924 [5] NCCL INFO comm 0x55d1 rank 5 nRanks 8 nNodes 1 "
                  "localRanks 8 localRank 5 MNNVL 0\n");
  LogSet set = parser.take();
  EXPECT_TRUE(set.problems.empty());
  EXPECT_EQ(set.stats.nccl_lines, 1u);
  ASSERT_EQ(set.ranks.size(), 1u);
  EXPECT_EQ(set.ranks[0].rank, 5);
}

TEST(RealLogs, SocketsBetweenFourNodes) {
  Result r = run({"nccl-issue1344-socket-4node.log"});
  EXPECT_EQ(kinds(r), std::vector<std::string>{"net-socket"});
}

TEST(RealLogs, HealthyExcerptsHaveNoFinding) {
  for (const char* f :
       {"nccl-tests-issue252-ibext-2node.log", "nccl-issue1189-2.19-ring-neighbors.log",
        "nccl-issue1358-2.19-two-gpus.log", "nccl-issue671-2.7-p2p-direct.log",
        "nccl-tests-issue213-2.19-nnodes1.log"}) {
    SCOPED_TRACE(f);
    Result r = run({f});
    EXPECT_EQ(r.set.stats.malformed, 0u);
    EXPECT_GT(r.set.stats.used, 0u);
    EXPECT_TRUE(r.findings.empty()) << r.findings[0].kind;
  }
}

// NCCL 2.28.9 under PyTorch 2.11 on one H200 without IB devices (scripts/gpu-check.sh's run):
// "NET/IB : Using [RO]; OOB eth0:..." names no device, only the relaxed-ordering flag; it was
// counted malformed. Every line is read now, and one rank alone is no finding.
TEST(RealLogs, Nccl228OneRankOnAnH200) {
  Result r = run({"ncclwatch-h200-2.28.9-one-rank.log"});
  EXPECT_EQ(r.set.stats.malformed, 0u);
  EXPECT_GT(r.set.stats.used, 100u);
  ASSERT_EQ(r.set.versions.size(), 1u);
  EXPECT_EQ(r.set.versions[0], "2.28.9+cuda13.0");
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].nranks, 1);
  EXPECT_TRUE(r.findings.empty()) << r.findings[0].kind;
}

TEST(RealLogs, IbextTransportAndGraphChannel) {
  Result r = run({"nccl-tests-issue252-ibext-2node.log", "nccl-issue1358-2.19-two-gpus.log"});
  bool ibext = false, graph_channel_without_pattern_skipped = r.set.stats.unknown > 0;
  for (const auto& v : r.set.ranks)
    for (const auto& t : v.transports)
      ibext = ibext || (t.net == "IBext_v8" && t.net_dev == 0 && t.direction == 2);
  EXPECT_TRUE(ibext);
  EXPECT_TRUE(graph_channel_without_pattern_skipped);
}

}  // namespace
}  // namespace ncclwatch::topology

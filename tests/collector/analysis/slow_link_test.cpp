// Slow network links on the DDP simulator's pair-links layout (ddp_sim.h): 8 ranks on 4 nodes
// (node-a: 0,1; node-b: 2,3; node-c: 4,5; node-d: 6,7), cross-node communicators per local
// rank over the node groups A = (a,b), (c,d) and B = (b,c), (d,a), and a loss all-reduce over
// everyone at the end of each step. A slow NIC on node-c slows A(c,d) and B(b,c): the ranks of
// nodes b, c and d reach the loss all-reduce late, none of them by any fault of its own.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/analyze.h"
#include "analysis/slow_link.h"
#include "ddp_sim.h"

namespace ncclwatch::analysis {
namespace {

struct LinkRun {
  model::Report report;
  const nlohmann::json& links() const { return report.json["slow_links"]; }
  const nlohmann::json& stragglers() const { return report.json["stragglers"]; }
  std::string text() const {
    std::string all;
    for (const auto& f : report.findings) all += f.text + "\n";
    return all;
  }
};

LinkRun run(int hosts, int slow_host, double slowdown, bool host_only = false) {
  auto p = testing::sim_params(2 * hosts, 2);
  p.steps = 20;
  p.jitter_ns = 20'000;
  p.pair_links = true;
  p.slow_link_host = slow_host;
  p.link_slowdown = slowdown;
  p.host_only = host_only;
  const auto s = testing::simulate(p);
  LinkRun r;
  analyze(s.job, s.match, s.clocks, r.report);
  return r;
}

TEST(SlowLink, CleanPairLayoutNamesNothing) {
  const LinkRun r = run(4, -1, 1.0);
  EXPECT_TRUE(r.links().empty()) << r.links().dump(1);
  EXPECT_TRUE(r.stragglers().empty()) << r.stragglers().dump(1);
}

TEST(SlowLink, SlowNicNamedAsLinkNotAsStragglers) {
  // Transfers on node-c's comms take 2.5x: its 4 comms (2 local ranks x 2 partitions) against
  // the 4 without it. The late ranks are behind the link, not stragglers or a node problem.
  const LinkRun r = run(4, 2, 2.5);
  ASSERT_EQ(r.links().size(), 1u) << r.text();
  const auto& l = r.links()[0];
  EXPECT_EQ(l["host"], "node-c");
  EXPECT_TRUE(l["hosts_alike"].empty());
  EXPECT_EQ(l["cause"], "network");
  EXPECT_NEAR(l["slowdown"].get<double>(), 2.5, 0.2);
  EXPECT_EQ(l["comms"], 4);
  EXPECT_EQ(l["comms_without"], 4);
  for (const auto& rank : l["late_ranks"]) {
    EXPECT_GE(rank.get<int>(), 2);  // nodes b, c, d only
  }
  EXPECT_FALSE(l["late_ranks"].empty());
  EXPECT_TRUE(r.stragglers().empty()) << r.stragglers().dump(1);
  EXPECT_TRUE(r.report.json["straggler_analysis"]["node_problems"].empty());
  EXPECT_NE(r.text().find("slow network link at node-c"), std::string::npos) << r.text();
  EXPECT_EQ(r.text().find("host-side stall"), std::string::npos) << r.text();
}

TEST(SlowLink, HostOnlyCannotTellAndSaysSo) {
  // No kernel times, no transfers: the late ranks are named with cause unknown, and the
  // evidence says GPU timing is needed to see a slow network link.
  const LinkRun r = run(4, 2, 2.5, true);
  EXPECT_TRUE(r.links().empty());
  for (const auto& s : r.stragglers()) {
    EXPECT_EQ(s["cause"], "unknown") << s.dump(1);
    EXPECT_NE(s["evidence"].get<std::string>().find("slow network link"), std::string::npos);
    EXPECT_GE(s["rank"].get<int>(), 2);
  }
}

TEST(SlowLink, NodesSharingEveryCommAreNamedTogether) {
  // 5 nodes: groups A = (a,b), (c,d,e) and B = (b,c), (d,e,a): node-d and node-e are in the
  // same communicators, so a slow NIC on either cannot be placed on one of them.
  const LinkRun r = run(5, 4, 2.5);
  ASSERT_EQ(r.links().size(), 1u) << r.text();
  std::vector<std::string> hosts{r.links()[0]["host"].get<std::string>()};
  for (const auto& h : r.links()[0]["hosts_alike"]) hosts.push_back(h.get<std::string>());
  std::sort(hosts.begin(), hosts.end());
  EXPECT_EQ(hosts, (std::vector<std::string>{"node-d", "node-e"}));
  EXPECT_NE(r.text().find("cannot be told apart"), std::string::npos) << r.text();
}

TEST(SlowLink, TwoNodesCannotBeLocalized) {
  // Every communicator spans both nodes: nothing to compare with, nobody is blamed.
  const LinkRun r = run(2, 1, 2.5);
  EXPECT_TRUE(r.links().empty()) << r.links().dump(1);
  EXPECT_TRUE(r.stragglers().empty()) << r.stragglers().dump(1);
}

}  // namespace
}  // namespace ncclwatch::analysis

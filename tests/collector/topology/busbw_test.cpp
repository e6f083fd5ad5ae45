// low-busbw from the job's own matched collectives, and the job's side of the node count.
#include <gtest/gtest.h>

#include "topology/busbw_table.h"
#include "topology/checks.h"
#include "topology/log_parser.h"
#include "topology/topology_report.h"

namespace ncclwatch::topology {
namespace {

constexpr uint64_t kComm = 0xc0ffee;
constexpr double MiB = 1 << 20;

// A job of `n` ranks, one comm over all of them, with GPU-timed collectives.
struct Job {
  model::JobTrace job;
  model::MatchResult match;
  int64_t t = 1'000'000;

  explicit Job(int n, int gpus_per_host = 4) {
    model::CommSummary cs;
    cs.id = kComm;
    cs.nranks = n;
    for (int r = 0; r < n; ++r) {
      model::RankTrace rt;
      rt.info.rank = r;
      rt.info.world_size = n;
      rt.info.host = "node" + std::to_string(r / gpus_per_host);
      rt.info.pid = 1000 + r;
      model::CommInfo ci;
      ci.id = kComm;
      ci.handle = 0x55550000 + static_cast<uint64_t>(r) * 0x100;
      ci.nranks = n;
      ci.rank = r;
      rt.comms.push_back(ci);
      job.ranks.push_back(rt);
      cs.ranks.push_back(r);
    }
    match.comms.push_back(cs);
  }

  // One instance reaching `busbw` GB/s (the last rank to arrive measures exactly that).
  void add(model::Func f, uint64_t bytes, double busbw, int calls = 1) {
    int n = static_cast<int>(job.ranks.size());
    for (int k = 0; k < calls; ++k) {
      double ns = algbw_bytes(f, bytes, n) * busbw_factor(f, n) / busbw;
      model::CollectiveInstance inst;
      inst.comm_id = kComm;
      inst.seq = match.instances.size();
      inst.func = f;
      inst.bytes = bytes;
      inst.first_member = static_cast<uint32_t>(match.members.size());
      inst.nmembers = static_cast<uint32_t>(n);
      inst.expected = static_cast<uint32_t>(n);
      for (int r = 0; r < n; ++r) {
        model::CallEvent c;
        c.enter_ns = t;
        c.exit_ns = t + 5000;
        c.comm_id = kComm;
        c.func = f;
        c.count = bytes;                               // int8 (datatype 0): bytes() == bytes
        c.gpu_start_ns = t + 10 + (n - 1 - r) * 1000;  // earlier arrivals wait longer
        c.gpu_end_ns = t + 10 + (n - 1) * 1000 + static_cast<int64_t>(ns);
        job.ranks[r].calls.push_back(c);
        match.members.push_back(
            {static_cast<uint32_t>(r), static_cast<uint32_t>(job.ranks[r].calls.size() - 1)});
      }
      match.instances.push_back(inst);
      t += static_cast<int64_t>(ns) + 100000;
    }
  }

  std::vector<TopoFinding> check(const LogSet& logs = {}) {
    auto groups = group_comms(logs);
    auto comms = build_contexts(logs, groups, job, match);
    std::vector<TopoFinding> out;
    check_node_count(logs, comms, out);
    check_bus_bandwidth(logs, comms, job, match, out);
    return out;
  }
};

TEST(BusBandwidth, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(busbw_factor(model::Func::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(model::Func::kAllGather, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor(model::Func::kReduceScatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(model::Func::kBroadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(model::Func::kReduce, 16), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(model::Func::kSend, 2), 0.0);
  EXPECT_DOUBLE_EQ(algbw_bytes(model::Func::kAllGather, 1000, 4), 4000.0);
  EXPECT_DOUBLE_EQ(algbw_bytes(model::Func::kAllReduce, 1000, 4), 1000.0);
}

TEST(BusBandwidth, TablePerOpSizeClassAndScope) {
  Job j(8);  // 2 hosts of 4: cross-node
  j.add(model::Func::kAllReduce, 24 * MiB, 40, 4);
  j.add(model::Func::kAllReduce, 24 * MiB, 50, 1);
  j.add(model::Func::kAllGather, 2 * MiB, 80, 3);  // counts 8 x 2 MiB = 16 MiB
  j.add(model::Func::kAllReduce, 4096, 0.5, 2);
  model::Report report;
  add_busbw_table(j.job, j.match, report);
  const auto& rows = report.json.at("bus_bandwidth");
  ASSERT_EQ(rows.size(), 3u) << rows.dump(1);
  // Ordered by op, then size class.
  EXPECT_EQ(rows[0]["op"], "all_reduce");
  EXPECT_EQ(rows[0]["size_min"].get<double>(), 4096);
  EXPECT_TRUE(rows[0]["latency_bound"].get<bool>());
  EXPECT_EQ(rows[1]["op"], "all_reduce");
  EXPECT_EQ(rows[1]["size_min"].get<double>(), 16 * MiB);
  EXPECT_EQ(rows[1]["size_max"].get<double>(), 32 * MiB);
  EXPECT_EQ(rows[1]["scope"], "cross-node");
  EXPECT_EQ(rows[1]["calls"], 5);
  EXPECT_NEAR(rows[1]["busbw_gbs"].get<double>(), 40, 0.01);  // times are whole ns
  EXPECT_NEAR(rows[1]["best_gbs"].get<double>(), 50, 0.01);
  EXPECT_NEAR(rows[1]["spread_gbs"].get<double>(), 0, 0.01);  // 4 of 5 alike: MAD 0
  EXPECT_GT(rows[1]["sem_gbs"].get<double>(), 0);
  EXPECT_FALSE(rows[1]["latency_bound"].get<bool>());
  EXPECT_EQ(rows[2]["op"], "all_gather");
  EXPECT_EQ(rows[2]["size_min"].get<double>(), 16 * MiB);
  EXPECT_NEAR(rows[2]["busbw_gbs"].get<double>(), 80, 0.01);

  Job one_host(4, 8);
  one_host.add(model::Func::kAllReduce, 24 * MiB, 40, 1);
  model::Report r2;
  add_busbw_table(one_host.job, one_host.match, r2);
  EXPECT_EQ(r2.json.at("bus_bandwidth")[0]["scope"], "intra-node");
}

TEST(BusBandwidth, SteadyJobHasNoFinding) {
  Job j(4);
  j.add(model::Func::kAllReduce, 1 * MiB, 40, 5);
  j.add(model::Func::kAllReduce, 64 * MiB, 90, 5);
  j.add(model::Func::kAllGather, 16 * MiB, 80, 5);
  j.add(model::Func::kAllReduce, 4096, 0.5, 5);  // tiny: latency-bound, never judged
  auto f = j.check();
  EXPECT_TRUE(f.empty()) << f[0].message;
}

TEST(BusBandwidth, LargerMessagesSlowerThanSmallerOnes) {
  Job j(4);
  j.add(model::Func::kAllReduce, 2 * MiB, 60, 3);
  j.add(model::Func::kAllReduce, 256 * MiB, 12, 3);
  auto f = j.check();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "low-busbw");
  EXPECT_NE(
      f[0].message.find("all_reduce of 256 MiB-512 MiB (3 calls): median bus bandwidth 12.0 GB/s"),
      std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("reached 60.0 GB/s"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].comm, "0x0000000000c0ffee");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));
}

TEST(BusBandwidth, MostCallsFarBelowTheBestOfTheirSize) {
  Job j(8);
  j.add(model::Func::kReduceScatter, 32 * MiB, 100, 2);
  j.add(model::Func::kReduceScatter, 32 * MiB, 20, 6);
  auto f = j.check();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("a third or less of the best call of that size (100.0 GB/s)"),
            std::string::npos)
      << f[0].message;
}

TEST(BusBandwidth, BelowWhatNcclsRingGraphGives) {
  Job j(4);
  j.add(model::Func::kAllReduce, 128 * MiB, 30, 3);
  // NCCL's logs of the same comm (joined through host, pid and comm handle): 12 ring channels
  // of 20 GB/s on one node.
  LogParser p;
  for (int r = 0; r < 4; ++r) {
    std::string pre =
        "node0:" + std::to_string(1000 + r) + ":7 [" + std::to_string(r) + "] NCCL INFO ";
    char ptr[32];
    std::snprintf(ptr, sizeof ptr, "0x%x", 0x55550000 + r * 0x100);
    p.add_text("nccl-debug.node0." + std::to_string(1000 + r) + ".log",
               pre + "comm " + ptr + " rank " + std::to_string(r) +
                   " nRanks 4 nNodes 1 localRanks 4 localRank " + std::to_string(r) + " MNNVL 0\n" +
                   pre +
                   "Pattern 4, crossNic 0, nChannels 12, bw 20.000000/20.000000, type NVL/PIX, "
                   "sameChannels 1\n");
  }
  LogSet logs = p.take();
  auto f = j.check(logs);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("under a quarter of what NCCL's ring graph gives (240.0 GB/s)"),
            std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].evidence.find("Pattern 4, crossNic 0, nChannels 12"), std::string::npos);
}

TEST(BusBandwidth, HostOnlyTimingIsNotJudged) {
  Job j(4);
  j.add(model::Func::kAllReduce, 2 * MiB, 60, 3);
  j.add(model::Func::kAllReduce, 256 * MiB, 12, 3);
  for (auto& r : j.job.ranks)
    for (auto& c : r.calls) c.gpu_start_ns = c.gpu_end_ns = 0;
  EXPECT_TRUE(j.check().empty());
}

TEST(BusBandwidth, JobHostsDisagreeWithNcclsNodeCount) {
  Job j(4, 1);  // four hosts, one rank each
  LogParser p;
  p.add_text("nccl-debug.node0.1000.log",
             "node0:1000:7 [0] NCCL INFO comm 0x55550000 rank 0 nRanks 4 nNodes 2 localRanks 2 "
             "localRank 0 MNNVL 0\n");
  LogSet logs = p.take();
  auto f = j.check(logs);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "node-count-mismatch");
  EXPECT_NE(
      f[0].message.find("NCCL counts 2 node(s) in a 4-rank comm, the ranks' host names say 4"),
      std::string::npos)
      << f[0].message;
}

TEST(BusBandwidth, ReportCarriesTheSectionAndJson) {
  Job j(4);
  j.add(model::Func::kAllReduce, 2 * MiB, 60, 3);
  j.add(model::Func::kAllReduce, 256 * MiB, 12, 3);
  model::Report report;
  add_to_report({}, j.job, j.match, report);
  ASSERT_EQ(report.json["topology"]["findings"].size(), 1u);
  EXPECT_EQ(report.json["topology"]["findings"][0]["kind"], "low-busbw");
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].source, "topology");
  EXPECT_NE(report.sections.at(0).body.find("low-busbw"), std::string::npos);
}

}  // namespace
}  // namespace ncclwatch::topology

// One line at a time: every line form of NCCL 2.4 .. 2.28 the parser knows, and what it does
// with truncated or foreign lines.
#include "topology/log_line.h"

#include <gtest/gtest.h>

namespace ncclwatch::topology {
namespace {

ParsedLine P(const std::string& msg, const std::string& prefix = "node0:123:456 [3] NCCL INFO ") {
  return parse_log_line(prefix + msg);
}

TEST(LogLine, PrefixForms) {
  auto p = P("Connected all rings");
  EXPECT_TRUE(p.prefix.ok);
  EXPECT_EQ(p.prefix.host, "node0");
  EXPECT_EQ(p.prefix.pid, 123);
  EXPECT_EQ(p.prefix.tid, 456);
  EXPECT_EQ(p.prefix.dev, 3);
  auto mpi = P("Connected all rings", "[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO ");
  EXPECT_TRUE(mpi.prefix.ok);
  EXPECT_EQ(mpi.prefix.host, "5873af64cf59");
  auto rank_prefix = P("Connected all rings", "[155] crow-ib-19:5330:5499 [3] NCCL INFO ");
  EXPECT_EQ(rank_prefix.prefix.host, "crow-ib-19");
  EXPECT_EQ(rank_prefix.prefix.pid, 5330);
  // No usable prefix: counted as unknown, never tied to a thread.
  EXPECT_EQ(P("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "garbage NCCL INFO ").kind,
            LineKind::kUnknown);
  EXPECT_EQ(P("x", "h:1:x [0] NCCL INFO ").kind, LineKind::kUnknown);
  EXPECT_EQ(parse_log_line("epoch 3 loss 0.25").kind, LineKind::kNotNccl);
  EXPECT_EQ(parse_log_line("").kind, LineKind::kNotNccl);
}

TEST(LogLine, Version) {
  EXPECT_EQ(P("NCCL version 2.19.3+cuda12.2").version, "2.19.3+cuda12.2");
  auto bare = parse_log_line("[1,0]<stdout>:NCCL version 2.5.6+cuda10.2");
  EXPECT_EQ(bare.kind, LineKind::kVersion);
  EXPECT_EQ(bare.version, "2.5.6+cuda10.2");
}

TEST(LogLine, SettingsAndDriverVersion) {
  auto s = P("NCCL_SOCKET_IFNAME set by environment to eth0");
  EXPECT_EQ(s.kind, LineKind::kSetting);
  EXPECT_EQ(s.setting_name, "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(s.setting_value, "eth0");
  auto n = P("NCCL_NTHREADS set by environment to 512.");
  EXPECT_EQ(n.setting_name, "NCCL_NTHREADS");
  EXPECT_EQ(n.setting_value, "512");  // NCCL's trailing '.' after numbers
  EXPECT_EQ(P("NCCL_ALGO set by environment to Tree").setting_value, "Tree");
  EXPECT_EQ(P("NCCL_bad name set by environment to x").kind, LineKind::kMalformed);
  auto d = P("cudaDriverVersion 12020");
  EXPECT_EQ(d.kind, LineKind::kDriverVersion);
  EXPECT_EQ(d.driver_version, 12020);
  EXPECT_EQ(P("cudaDriverVersion x").kind, LineKind::kMalformed);
}

TEST(LogLine, CommLinesOfEachVersion) {
  auto v219 = P("comm 0x8ec0ac0 rank 6 nRanks 16 nNodes 2 localRanks 8 localRank 6 MNNVL 0");
  ASSERT_EQ(v219.kind, LineKind::kComm);
  EXPECT_EQ(v219.comm.ptr, "0x8ec0ac0");
  EXPECT_EQ(v219.comm.rank, 6);
  EXPECT_EQ(v219.comm.nranks, 16);
  EXPECT_EQ(v219.comm.nnodes, 2);
  EXPECT_EQ(v219.comm.local_ranks, 8);
  EXPECT_EQ(v219.comm.local_rank, 6);
  EXPECT_FALSE(v219.comm.complete);

  auto v25 = P("comm 0x7efe60002250 rank 15 nranks 64 cudaDev 0 nvmlDev 0 - Init COMPLETE");
  ASSERT_EQ(v25.kind, LineKind::kComm);
  EXPECT_TRUE(v25.comm.complete);
  EXPECT_EQ(v25.comm.nnodes, -1);
  EXPECT_EQ(v25.comm.cuda_dev, 0);

  auto v212 = P(
      "comm 0x5612 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x1c9bd2b6ba1ba05a - Init COMPLETE");
  EXPECT_EQ(v212.comm.comm_id, "0x1c9bd2b6ba1ba05a");
  EXPECT_EQ(v212.comm.bus_id, "1000");

  auto v223 =
      P("ncclCommInitRankConfig comm 0x55d1 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 5d000 commId "
        "0x9e1f2a localSize 8 used 123 bytes - Init START");
  ASSERT_EQ(v223.kind, LineKind::kComm);
  EXPECT_FALSE(v223.comm.complete);
  EXPECT_EQ(v223.comm.comm_id, "0x9e1f2a");

  EXPECT_EQ(P("comm 0x55 rank 0 nranks 8 cudaDev 0 busId 1b000 - Destroy COMPLETE").kind,
            LineKind::kKnown);
  // Truncated or impossible: malformed, not a comm.
  EXPECT_EQ(P("comm 0x55 rank 0 nranks").kind, LineKind::kMalformed);
  EXPECT_EQ(P("comm 0x55 rank 9 nranks 8 cudaDev 0").kind, LineKind::kMalformed);
  EXPECT_EQ(P("comm 0x55 rank -1 nRanks 8 nNodes 1").kind, LineKind::kMalformed);
}

TEST(LogLine, RingOrders) {
  auto r = P("Channel 01/08 :    0   5   4   7   6   3  10   9   8  13  12  15  14  11   2   1");
  ASSERT_EQ(r.kind, LineKind::kRingOrder);
  EXPECT_EQ(r.ring.channel, 1);
  EXPECT_EQ(r.ring.nchannels, 8);
  ASSERT_EQ(r.ring.ranks.size(), 16u);
  EXPECT_EQ(r.ring.ranks[6], 10);
  EXPECT_FALSE(r.ring.truncated);
  auto cut =
      P("Channel 00/32 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17  "
        "1...");
  ASSERT_EQ(cut.kind, LineKind::kRingOrder);
  EXPECT_TRUE(cut.ring.truncated);
  EXPECT_EQ(cut.ring.ranks.size(), 18u);
  EXPECT_EQ(P("Channel 00/08 :    0   5   x").kind, LineKind::kMalformed);
  auto old = P("Ring 00 :    0   1   2   3");
  EXPECT_EQ(old.kind, LineKind::kRingOrder);
}

TEST(LogLine, RingNeighbors) {
  auto n = P("Ring 02 : 2 -> 0 -> 1");
  ASSERT_EQ(n.kind, LineKind::kRingNeighbors);
  EXPECT_EQ(n.neighbors.channel, 2);
  EXPECT_EQ(n.neighbors.prev, 2);
  EXPECT_EQ(n.neighbors.self, 0);
  EXPECT_EQ(n.neighbors.next, 1);
  EXPECT_EQ(P("Ring 02 : 2 -> 0 ->").kind, LineKind::kMalformed);
}

TEST(LogLine, TreesInAllForms) {
  auto t = P("Trees [0] 3/-1/-1->2->1 [1] 3/-1/-1->2->1 [2] 3/10/-1->2->-1");
  ASSERT_EQ(t.kind, LineKind::kTrees);
  EXPECT_EQ(t.tree_channels, 3);
  auto dual =
      P("Trees [0] 154/-1/-1->155->153|153->155->154/-1/-1 [1] "
        "153/-1/-1->155->154|154->155->153/-1/-1");
  ASSERT_EQ(dual.kind, LineKind::kTrees);
  EXPECT_EQ(dual.tree_channels, 2);
  auto v24 = P("Trees [0] 22->23->-1/-1/-1");
  EXPECT_EQ(v24.tree_channels, 1);
  EXPECT_EQ(P("Trees [0] 3/-1/-1->2->1 [1]").kind, LineKind::kMalformed);
  EXPECT_EQ(P("Trees [0] [1] 3/-1").kind, LineKind::kMalformed);
}

TEST(LogLine, TransportsOfEachVersion) {
  struct Case {
    const char* msg;
    Via via;
    int channel, from, to, direction;
    const char* net;
    int net_dev;
  };
  const Case cases[] = {
      {"Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", Via::kP2P, 0, 0, 1, 0, "", -1},
      {"Channel 01/0 : 1[1] -> 2[2] via P2P/CUMEM", Via::kP2P, 1, 1, 2, 0, "", -1},
      {"Channel 00/0 : 2[2] -> 3[3] via P2P/direct pointer/read", Via::kP2P, 0, 2, 3, 0, "", -1},
      {"Channel 00 : 3[3] -> 4[4] via SHM/direct/direct", Via::kShm, 0, 3, 4, 0, "", -1},
      {"Channel 02/0 : 7[7] -> 8[0] [send] via NET/IB/3/GDRDMA", Via::kNet, 2, 7, 8, 1, "IB", 3},
      {"Channel 00/0 : 3[3] -> 4[0] [receive] via NET/IBext_v8/0/GDRDMA", Via::kNet, 0, 3, 4, 2,
       "IBext_v8", 0},
      {"Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3", Via::kNet, 3, 15, 6, 1, "Socket", 3},
      {"Channel 00/1 : 0[0] -> 8[0] [send] via NET/IB/1(2)/GDRDMA/Shared", Via::kNet, 0, 0, 8, 1,
       "IB", 1},
      {"Channel 04 : 1[7000] -> 2[a000] via P2P/direct pointer", Via::kP2P, 4, 1, 2, 0, "", -1},
      {"Ring 00 : 12[41000] -> 11[2d000] via P2P/IPC", Via::kP2P, 0, 12, 11, 0, "", -1},
      {"Ring 00 : 35 -> 34 [send] via NET/Socket/0", Via::kNet, 0, 35, 34, 1, "Socket", 0},
      {"Ring 00 : 16 -> 32 [receive] via NET/IB/0", Via::kNet, 0, 16, 32, 2, "IB", 0},
      {"Channel 00/0 : 0[0] -> 1[1] via NVLS/NVLS", Via::kNvls, 0, 0, 1, 0, "", -1},
      {"Channel 00/0 : 0[0] -> 1[1] via COLLNET/SHARP", Via::kCollNet, 0, 0, 1, 0, "", -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.msg);
    auto p = P(c.msg);
    ASSERT_EQ(p.kind, LineKind::kTransport);
    EXPECT_EQ(p.transport.via, c.via);
    EXPECT_EQ(p.transport.channel, c.channel);
    EXPECT_EQ(p.transport.from, c.from);
    EXPECT_EQ(p.transport.to, c.to);
    EXPECT_EQ(p.transport.direction, c.direction);
    EXPECT_EQ(p.transport.net, c.net);
    EXPECT_EQ(p.transport.net_dev, c.net_dev);
    EXPECT_EQ(p.transport.evidence, c.msg);
  }
  // Cut off mid-line (a log of a killed process): malformed, never half-parsed.
  EXPECT_EQ(P("Channel 00/0 : 0[0] -> 1[").kind, LineKind::kMalformed);
  EXPECT_EQ(P("Channel 00/0 : 0[0] -> 1[1] [sen via NET/IB/0").kind, LineKind::kMalformed);
  EXPECT_EQ(P("Channel 00/0 : 0[0] -> 1[1] via ").kind, LineKind::kMalformed);
  EXPECT_EQ(P("Channel 00/0 0[0] -> 1[1] via P2P").kind, LineKind::kMalformed);
  EXPECT_EQ(P("Channel 00/").kind, LineKind::kMalformed);
  EXPECT_EQ(P("Channel switching enabled").kind, LineKind::kUnknown);
}

TEST(LogLine, PatternsAndGraphChannels) {
  auto p =
      P("Pattern 4, crossNic 0, nChannels 8, bw 40.000000/20.500000, type NVL/PIX, sameChannels 1");
  ASSERT_EQ(p.kind, LineKind::kPattern);
  EXPECT_EQ(p.pattern.pattern, 4);
  EXPECT_EQ(p.pattern.cross_nic, 0);
  EXPECT_EQ(p.pattern.nchannels, 8);
  EXPECT_DOUBLE_EQ(p.pattern.bw_intra, 40.0);
  EXPECT_DOUBLE_EQ(p.pattern.bw_inter, 20.5);
  EXPECT_EQ(p.pattern.type_intra, "NVL");
  EXPECT_EQ(p.pattern.type_inter, "PIX");
  auto old = P("Pattern 3, crossNic 0, nChannels 2, speed 12/12, nvlink 1, type 2, sameChannels 1");
  EXPECT_EQ(old.pattern.nchannels, 2);
  EXPECT_DOUBLE_EQ(old.pattern.bw_intra, 12.0);
  EXPECT_EQ(P("Pattern 1, crossNic 0, nChannels 2").pattern.pattern, 1);
  EXPECT_EQ(P("Pattern 4, crossNic 0").kind, LineKind::kMalformed);

  auto ch = P(" 0 : NET/0 GPU/0 GPU/1 GPU/2 GPU/3 NET/0");
  ASSERT_EQ(ch.kind, LineKind::kGraphChannel);
  EXPECT_EQ(ch.graph_channel.size(), 6u);
  EXPECT_EQ(ch.graph_channel.front(), "NET/0");
  EXPECT_EQ(P("12 : NET/0-1 GPU/0-1b000 NET/0-1").kind, LineKind::kGraphChannel);
  EXPECT_EQ(P(" 0 :    0    1").kind, LineKind::kGraphChannel);
  EXPECT_EQ(P(" 0 : what is this").kind, LineKind::kMalformed);
}

TEST(LogLine, ChannelCountsAndNics) {
  auto c =
      P("24 coll channels, 24 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels "
        "per peer");
  ASSERT_EQ(c.kind, LineKind::kCollChannels);
  EXPECT_EQ(c.coll_channels, 24);
  EXPECT_EQ(P("2 coll channels, 2 p2p channels, 2 p2p channels per peer").coll_channels, 2);

  auto n =
      P("NET/IB : Using [0]mlx5_1:1/IB [1]mlx5_3:1/IB [2]mlx5_0:1/RoCE ; OOB eth0:10.100.62.64<0>");
  ASSERT_EQ(n.kind, LineKind::kNics);
  EXPECT_EQ(n.nics.net, "IB");
  ASSERT_EQ(n.nics.devices.size(), 3u);
  EXPECT_EQ(n.nics.devices[2], "mlx5_0:1/RoCE");
  EXPECT_EQ(n.nics.host, "node0");
  auto s = P("NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>");
  EXPECT_EQ(s.nics.devices.size(), 2u);
  EXPECT_EQ(P("NET/IB : No device found.").kind, LineKind::kKnown);
  EXPECT_EQ(P("NET/IB : Using [0]").kind, LineKind::kMalformed);
  // "[RO]" is a flag (relaxed ordering), not a device; NCCL 2.28 prints it alone without IB.
  EXPECT_EQ(P("NET/IB : Using [RO]; OOB eth0:192.0.2.2<0>").kind, LineKind::kKnown);
  auto ro = P("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>");
  ASSERT_EQ(ro.kind, LineKind::kNics);
  ASSERT_EQ(ro.nics.devices.size(), 2u);
  EXPECT_EQ(ro.nics.devices[1], "mlx5_1:1/IB");
}

TEST(LogLine, Nvls) {
  EXPECT_EQ(P("NVLS comm 0x5561 headRank 0 nHeads 8 buffSize 4194304 memSize 2097152").kind,
            LineKind::kNvls);
  EXPECT_EQ(P("Connected NVLS").kind, LineKind::kNvls);
}

}  // namespace
}  // namespace ncclwatch::topology

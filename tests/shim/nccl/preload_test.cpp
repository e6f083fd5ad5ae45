// libncclwatch.so under LD_PRELOAD in multi-process runs over the fake NCCL, launched like
// torchrun (fake_launcher + fake_rank): counts per kind, sequence numbers equal across ranks,
// split ids, groups, send/recv pairing, overflow, fork, threads, a SIGKILLed rank, and what must
// create nothing. Plus pass-through over the real libnccl.so.2 when it is installed.
#include <dirent.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../support/trace_file.h"
#include "process.h"

namespace ncclwatch::testing {

using test_support::run_process;
namespace {

using format::Func;
using format::RecordKind;

std::vector<std::string> list_dir(const std::string& dir, const std::string& prefix,
                                  const std::string& suffix = "") {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0 && n.size() >= suffix.size() &&
          n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) {
        out.push_back(dir + "/" + n);
      }
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

class PreloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    name_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    job_ = "pt" + std::to_string(getpid()) + "-" + name_;
    dir_ = "/tmp/ncclwatch-preload-" + job_;
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  void TearDown() override {
    std::system(("rm -rf '" + dir_ + "'").c_str());
    for (const auto& s : list_dir("/dev/shm", "ncclwatch." + job_ + ".")) unlink(s.c_str());
  }

  // Launches n ranks of fake_rank with the shim preloaded; returns the launcher's status.
  int launch(int n, std::vector<std::string> rank_args, std::vector<std::string> extra = {},
             std::string* output = nullptr) {
    std::string asan = "ASAN_OPTIONS=verify_asan_link_order=0";
    if (const char* a = std::getenv("ASAN_OPTIONS")) asan += std::string(":") + a;
    std::vector<std::string> argv = {FAKE_LAUNCHER,
                                     "--nproc",
                                     std::to_string(n),
                                     "--env",
                                     std::string("LD_PRELOAD=") + NCCLWATCH_SHIM_LIB,
                                     "--env",
                                     asan};
    for (const auto& e : extra) {
      if (e.rfind("@", 0) == 0) {  // "@R:KEY=VAL": for rank R only
        argv.insert(argv.end(),
                    {"--env-rank", e.substr(1, e.find(':') - 1), e.substr(e.find(':') + 1)});
      } else {
        argv.insert(argv.end(), {"--env", e});
      }
    }
    argv.push_back("--");
    argv.push_back(FAKE_RANK);
    argv.insert(argv.end(), rank_args.begin(), rank_args.end());
    return run_process(argv,
                       {"NCCLWATCH_DIR=" + dir_, "NCCLWATCH_JOB=" + job_, "NCCLWATCH_HOST=h",
                        "FAKE_NCCL_TIMEOUT_S=20"},
                       output);
  }

  std::map<int, TraceFile> traces_by_rank() {
    std::map<int, TraceFile> out;
    for (const auto& p : list_dir(dir_, "ncclwatch.", ".trace")) {
      TraceFile t = TraceFile::read(p);
      EXPECT_TRUE(t.ok) << p;
      out[t.header.process.rank] = t;
    }
    return out;
  }

  uint64_t world_comm(const TraceFile& t) {
    for (const auto& c : t.comms()) {
      if (c.parent_id == 0) return c.comm_id;
    }
    return 0;
  }

  std::string name_, job_, dir_;
};

// (func, seq) of every call on comm `id`, in issue order.
std::vector<std::pair<int, uint32_t>> calls_on(const TraceFile& t, uint64_t id) {
  std::vector<std::pair<int, uint32_t>> out;
  for (const auto& r : t.records) {
    if (r.prefix.kind == RecordKind::kCall && r.call.comm_id == id &&
        format::is_collective(static_cast<Func>(r.prefix.u8a))) {
      out.emplace_back(r.prefix.u8a, r.call.seq);
    }
  }
  return out;
}

TEST_F(PreloadTest, FourRanksRecordWhatEachRankCalled) {
  std::string out;
  ASSERT_EQ(launch(4,
                   {"--steps", "5", "--colls", "3", "--kinds", "allreduce,bcast,allgather",
                    "--split", "2", "--sendrecv"},
                   {}, &out),
            0)
      << out;
  auto traces = traces_by_rank();
  ASSERT_EQ(traces.size(), 4u);
  std::map<int, uint64_t> split_ids;
  std::vector<std::pair<int, uint32_t>> reference;
  for (auto& [rank, t] : traces) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(t.header.state, format::kTraceStateClosed);
    EXPECT_EQ(t.header.process.world_size, 4);
    EXPECT_EQ(t.header.dropped, 0u);
    EXPECT_EQ(t.header.records, t.records.size());
    EXPECT_EQ(t.calls(Func::kAllReduce).size(), 10u);  // 5 on the world comm, 5 on the split
    EXPECT_EQ(t.calls(Func::kBcast).size(), 5u);
    EXPECT_EQ(t.calls(Func::kBroadcast).size(), 0u);  // ncclBcast's inner call: not recorded
    EXPECT_EQ(t.calls(Func::kAllGather).size(), 5u);
    EXPECT_EQ(t.calls(Func::kSend).size(), 5u);
    EXPECT_EQ(t.calls(Func::kRecv).size(), 5u);
    EXPECT_EQ(t.count(RecordKind::kGroup, static_cast<int>(Func::kGroupStart)), 5u);
    EXPECT_EQ(t.count(RecordKind::kGroup, static_cast<int>(Func::kGroupEnd)), 5u);
    EXPECT_EQ(t.count(RecordKind::kComm), 2u);
    EXPECT_EQ(t.count(RecordKind::kCommEnd), 3u);  // split destroy, world finalize + destroy
    EXPECT_EQ(t.count(RecordKind::kUniqueId), rank == 0 ? 1u : 0u);
    for (const auto& r : t.records) {
      if (r.prefix.kind == RecordKind::kCall) {
        EXPECT_EQ(r.call.prefix.u8b, 0) << "result";
      }
    }
    uint64_t world = world_comm(t);
    ASSERT_NE(world, 0u);
    auto mine = calls_on(t, world);
    ASSERT_EQ(mine.size(), 15u);
    for (uint32_t i = 0; i < mine.size(); ++i) EXPECT_EQ(mine[i].second, i);
    if (reference.empty()) reference = mine;
    EXPECT_EQ(mine, reference);  // same collectives, same seq, on every rank
    for (const auto& c : t.comms()) {
      if (c.parent_id == world) {
        split_ids[rank] = c.comm_id;
        EXPECT_EQ(c.color, rank % 2);
        EXPECT_EQ(c.nranks, 2);
        EXPECT_EQ(c.rank, rank / 2);
      } else {
        EXPECT_EQ(c.rank, rank);
        EXPECT_EQ(c.nranks, 4);
      }
    }
    for (const auto& s : t.calls(Func::kSend)) {
      EXPECT_TRUE(s.prefix.flags & format::kCallInGroup);
      EXPECT_NE(s.group_id, 0u);
      EXPECT_EQ(s.group_depth, 1);
    }
  }
  EXPECT_EQ(split_ids[0], split_ids[2]);
  EXPECT_EQ(split_ids[1], split_ids[3]);
  EXPECT_NE(split_ids[0], split_ids[1]);
  // Send/recv pairing: rank r's n-th send to r+1 is rank r+1's n-th receive from r.
  for (int r = 0; r < 4; ++r) {
    auto sends = traces[r].calls(Func::kSend);
    auto recvs = traces[(r + 1) % 4].calls(Func::kRecv);
    ASSERT_EQ(sends.size(), recvs.size());
    for (size_t i = 0; i < sends.size(); ++i) {
      EXPECT_EQ(sends[i].peer, (r + 1) % 4);
      EXPECT_EQ(recvs[i].peer, r);
      EXPECT_EQ(sends[i].seq, recvs[i].seq);
      EXPECT_EQ(sends[i].comm_id, recvs[i].comm_id);
      EXPECT_EQ(sends[i].count, recvs[i].count);
    }
  }
}

TEST_F(PreloadTest, GroupedCollectivesShareTheGroup) {
  ASSERT_EQ(launch(2, {"--steps", "3", "--colls", "4", "--group"}), 0);
  auto traces = traces_by_rank();
  ASSERT_EQ(traces.size(), 2u);
  for (auto& [rank, t] : traces) {
    auto calls = t.calls(Func::kAllReduce);
    ASSERT_EQ(calls.size(), 12u);
    std::set<uint32_t> groups;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_TRUE(calls[i].prefix.flags & format::kCallInGroup);
      groups.insert(calls[i].group_id);
      EXPECT_EQ(calls[i].group_id, calls[i - i % 4].group_id);  // 4 per group
    }
    EXPECT_EQ(groups.size(), 3u);
    EXPECT_EQ(groups.count(0), 0u);
  }
}

TEST_F(PreloadTest, LateRankMakesOthersWait) {
  ASSERT_EQ(launch(3, {"--steps", "2", "--colls", "2", "--sleep", "2:1:200"}), 0);
  auto traces = traces_by_rank();
  ASSERT_EQ(traces.size(), 3u);
  int64_t late_enter = traces[2].calls(Func::kAllReduce)[1].t_enter_ns;
  for (int r = 0; r < 2; ++r) {
    // The others entered collective 1 before rank 2 did, and left it only after rank 2 came.
    EXPECT_LT(traces[r].calls(Func::kAllReduce)[1].t_enter_ns, late_enter);
    EXPECT_GE(traces[r].calls(Func::kAllReduce)[1].t_exit_ns, late_enter);
  }
}

// A rank slow to start (exec, the preloaded shim: seconds on a loaded machine) is not a hang: a
// short FAKE_NCCL_TIMEOUT_S (ncclwatch demo hang's 2 s, the e2e hang tests') counts only once
// the comm is through its first collective, so rank 2 reaching collective 0 late still succeeds.
TEST_F(PreloadTest, ASlowStartIsNotTakenForAHang) {
  ASSERT_EQ(
      launch(3, {"--steps", "1", "--colls", "2", "--sleep", "2:0:1500"}, {"FAKE_NCCL_TIMEOUT_S=1"}),
      0);
  auto traces = traces_by_rank();
  ASSERT_EQ(traces.size(), 3u);
  for (auto& [rank, t] : traces) EXPECT_EQ(t.calls(Func::kAllReduce).size(), 2u) << rank;
}

TEST_F(PreloadTest, RingOverflowCountsDropsAndLosesNothingElse) {
  std::vector<std::string> args = {"--steps", "100", "--colls", "2"};
  // Full detail past the first 50 steps (docs/always-on.md): every record counts here.
  ASSERT_EQ(launch(2, args, {"NCCLWATCH_TEST_DRAIN_HOLD=1", "NCCLWATCH_DETAIL=all"}), 0);
  auto full = traces_by_rank();
  ASSERT_EQ(full.size(), 2u);
  std::system(("rm -rf '" + dir_ + "'").c_str());
  ASSERT_EQ(
      launch(2, args,
             {"NCCLWATCH_TEST_DRAIN_HOLD=1", "NCCLWATCH_RING_MB=0.01", "NCCLWATCH_DETAIL=all"}),
      0);
  auto small = traces_by_rank();
  ASSERT_EQ(small.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const TraceFile& f = full[r];
    const TraceFile& s = small[r];
    EXPECT_EQ(f.header.dropped, 0u);
    EXPECT_GT(s.header.dropped, 0u);
    EXPECT_EQ(s.records.size() + s.header.dropped, f.records.size());
    // What was kept is exactly the beginning of the complete record stream.
    ASSERT_LT(s.records.size(), f.records.size());
    for (size_t i = 0; i < s.records.size(); ++i) {
      EXPECT_EQ(s.records[i].prefix.kind, f.records[i].prefix.kind) << i;
      EXPECT_EQ(s.records[i].prefix.u8a, f.records[i].prefix.u8a) << i;
      if (s.records[i].prefix.kind == RecordKind::kCall) {
        EXPECT_EQ(s.records[i].call.seq, f.records[i].call.seq) << i;
      }
    }
  }
}

TEST_F(PreloadTest, ForkedChildRecordsOnlyItsOwnCalls) {
  ASSERT_EQ(launch(2, {"--steps", "3", "--colls", "1", "--fork", "1"}), 0);
  auto files = list_dir(dir_, "ncclwatch.", ".trace");
  ASSERT_EQ(files.size(), 4u);
  int parents = 0, children = 0;
  for (const auto& p : files) {
    TraceFile t = TraceFile::read(p);
    auto comms = t.comms();
    ASSERT_EQ(comms.size(), 1u) << p;
    if (comms[0].nranks == 1) {
      ++children;
      auto calls = t.calls(Func::kAllReduce);
      ASSERT_EQ(calls.size(), 1u);
      EXPECT_EQ(calls[0].seq, 0u);
      EXPECT_TRUE(calls[0].prefix.flags & format::kCallNoKernel);
      EXPECT_EQ(calls[0].comm_id, comms[0].comm_id);
      EXPECT_EQ(t.count(RecordKind::kUniqueId), 1u);
    } else {
      ++parents;
      EXPECT_EQ(t.calls(Func::kAllReduce).size(), 3u);
    }
    EXPECT_EQ(t.header.state, format::kTraceStateClosed);
  }
  EXPECT_EQ(parents, 2);
  EXPECT_EQ(children, 2);
}

TEST_F(PreloadTest, TwoThreadsCallingAtOnce) {
  ASSERT_EQ(launch(2, {"--steps", "20", "--colls", "2", "--threads"}), 0);
  auto traces = traces_by_rank();
  ASSERT_EQ(traces.size(), 2u);
  for (auto& [rank, t] : traces) {
    auto comms = t.comms();
    ASSERT_EQ(comms.size(), 2u);
    std::set<uint32_t> tids;
    for (const auto& c : comms) {
      auto calls = calls_on(t, c.comm_id);
      ASSERT_EQ(calls.size(), 40u);
      for (uint32_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].second, i);
    }
    for (const auto& c : t.calls(Func::kAllReduce)) tids.insert(c.prefix.tid);
    EXPECT_EQ(tids.size(), 2u);
    EXPECT_EQ(t.calls(Func::kAllReduce).size(), 80u);
  }
}

TEST_F(PreloadTest, NonBlockingCommsAreFlagged) {
  ASSERT_EQ(launch(2, {"--steps", "3", "--colls", "2", "--nonblocking"}), 0);
  auto traces = traces_by_rank();
  ASSERT_EQ(traces.size(), 2u);
  for (auto& [rank, t] : traces) {
    auto comms = t.comms();
    ASSERT_EQ(comms.size(), 1u);
    EXPECT_EQ(comms[0].prefix.u8b, static_cast<uint8_t>(ncclInProgress));
    auto calls = t.calls(Func::kAllReduce);
    ASSERT_EQ(calls.size(), 6u);
    for (const auto& c : calls) EXPECT_TRUE(c.prefix.flags & format::kCallNonBlocking);
  }
}

TEST_F(PreloadTest, ClockOffsetHookShiftsOneRank) {
  ASSERT_EQ(launch(2, {"--steps", "1"}, {"@1:NCCLWATCH_TEST_CLOCK_OFFSET_NS=10000000000"}), 0);
  auto traces = traces_by_rank();
  ASSERT_EQ(traces.size(), 2u);
  int64_t d_mono =
      traces[1].header.process.start_monotonic_ns - traces[0].header.process.start_monotonic_ns;
  int64_t d_real =
      traces[1].header.process.start_realtime_ns - traces[0].header.process.start_realtime_ns;
  // 10 s of offset; the ranks start their recorders within a fraction of a second of each other.
  EXPECT_GT(d_mono, 7500000000);
  EXPECT_LT(d_mono, 12500000000);
  EXPECT_GT(d_real, 7500000000);
  EXPECT_LT(d_real, 12500000000);
}

TEST_F(PreloadTest, SigkilledRankLeavesSegmentAndPartialTrace) {
  int rc = launch(2, {"--steps", "6", "--colls", "2", "--exit", "1:3:kill"});
  EXPECT_NE(rc, 0);
  auto segments = list_dir("/dev/shm", "ncclwatch." + job_ + ".");
  ASSERT_GE(segments.size(), 1u);  // the killed rank's (rank 0 was torn down with SIGTERM too)
  auto traces = traces_by_rank();
  ASSERT_EQ(traces.count(1), 1u);
  const TraceFile& killed = traces[1];
  EXPECT_EQ(killed.header.state, format::kTraceStateOpen);
  std::string seg =
      "/dev/shm/ncclwatch." + job_ + ".h." + std::to_string(killed.header.process.pid);
  ASSERT_TRUE(exists(seg));
  // The segment holds every record: written_pos counts them all; those not on disk are in the
  // ring (read_pos .. write_pos).
  FILE* f = std::fopen(seg.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  format::SegmentHeader h{};
  ASSERT_EQ(std::fread(&h, sizeof h, 1, f), 1u);
  std::fclose(f);
  EXPECT_EQ(h.magic, format::kSegmentMagic);
  EXPECT_EQ(h.state, format::kSegmentStateLive);
  EXPECT_EQ(h.process.rank, 1);
  EXPECT_GE(h.read_pos, killed.records.size());
  EXPECT_EQ(h.dropped, 0u);
  // Records of rank 1 in all: comm + uniqueid-less init, 3 steps x 2 allreduce, identity, clock.
  EXPECT_GE(h.write_pos, 6u + 1u);
  std::string out;
  int crc = run_process({NCCLWATCH_CLI, "collect", "--job", job_, "--dir", dir_}, {}, &out);
  ASSERT_EQ(crc, 0) << out;
  EXPECT_FALSE(exists(seg)) << out;
  TraceFile salvaged = traces_by_rank()[1];
  EXPECT_EQ(salvaged.header.state, format::kTraceStateSalvaged);
  EXPECT_GE(salvaged.records.size(), h.write_pos);  // file + ring, nothing lost
  auto calls = salvaged.calls(Func::kAllReduce);
  ASSERT_EQ(calls.size(), 6u);  // nothing twice
  for (uint32_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].seq, i);
}

TEST_F(PreloadTest, FindsNcclDlopenedLocallyAfterStartup) {
  std::string asan = "ASAN_OPTIONS=verify_asan_link_order=0";
  if (const char* a = std::getenv("ASAN_OPTIONS")) asan += std::string(":") + a;
  std::string out;
  ASSERT_EQ(run_process({LOCAL_DLOPEN_PROBE, FAKE_NCCL_LIB},
                        {std::string("LD_PRELOAD=") + NCCLWATCH_SHIM_LIB, asan,
                         "NCCLWATCH_DIR=" + dir_, "NCCLWATCH_JOB=" + job_, "NCCLWATCH_HOST=h"},
                        &out),
            0)
      << out;
  auto files = list_dir(dir_, "ncclwatch.", ".trace");
  ASSERT_EQ(files.size(), 1u);
  TraceFile t = TraceFile::read(files[0]);
  EXPECT_EQ(t.calls(Func::kAllReduce).size(), 1u);
  EXPECT_EQ(t.comms().size(), 1u);
}

TEST_F(PreloadTest, OffCreatesNothing) {
  ASSERT_EQ(launch(2, {"--steps", "2"}, {"NCCLWATCH=off"}), 0);
  EXPECT_FALSE(exists(dir_));
  EXPECT_TRUE(list_dir("/dev/shm", "ncclwatch." + job_ + ".").empty());
}

TEST_F(PreloadTest, ProcessThatNeverCallsNcclCreatesNothing) {
  ASSERT_EQ(launch(2, {"--no-nccl"}), 0);
  EXPECT_FALSE(exists(dir_));
  EXPECT_TRUE(list_dir("/dev/shm", "ncclwatch." + job_ + ".").empty());
}

TEST_F(PreloadTest, RealNcclPassesThrough) {
  std::string real = NCCLWATCH_REAL_NCCL_PATH;
  if (real.empty() || !exists(real)) GTEST_SKIP() << "no real libnccl.so.2";
  std::string libdir = "LD_LIBRARY_PATH=" + real.substr(0, real.rfind('/'));
  std::string plain, preloaded;
  ASSERT_EQ(run_process({FAKE_RANK, "--probe"}, {libdir}, &plain), 0) << plain;
  std::string asan = "ASAN_OPTIONS=verify_asan_link_order=0";
  if (const char* a = std::getenv("ASAN_OPTIONS")) asan += std::string(":") + a;
  ASSERT_EQ(run_process({FAKE_RANK, "--probe"},
                        {libdir, std::string("LD_PRELOAD=") + NCCLWATCH_SHIM_LIB, asan,
                         "NCCLWATCH_DIR=" + dir_, "NCCLWATCH_JOB=" + job_, "NCCLWATCH_HOST=h"},
                        &preloaded),
            0)
      << preloaded;
  auto line = [](const std::string& s) {  // the probe's line, whatever else was printed
    const std::size_t at = s.find("version_rc=");
    return s.substr(at, s.find('\n', at) - at);
  };
  ASSERT_NE(plain.find("version_rc=0 version=2"), std::string::npos) << plain;
  ASSERT_NE(preloaded.find("version_rc="), std::string::npos) << preloaded;
  EXPECT_EQ(line(plain), line(preloaded));  // same version, same unique-id and init codes
  auto files = list_dir(dir_, "ncclwatch.", ".trace");
  ASSERT_EQ(files.size(), 1u);  // and the calls were seen by the shim
  TraceFile t = TraceFile::read(files[0]);
  ASSERT_EQ(t.comms().size(), 1u);
  EXPECT_EQ(t.count(RecordKind::kUniqueId), 1u);
}

}  // namespace
}  // namespace ncclwatch::testing

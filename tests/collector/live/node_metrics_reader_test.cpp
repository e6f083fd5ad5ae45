#include "live/node_metrics_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include "live/metrics_collectable.h"
#include "ncclwatch/in_flight_slot.h"
#include "synthetic_records.h"

namespace ncclwatch::live {
namespace {

namespace fs = std::filesystem;
using namespace testing;
using format::Func;

class NodeMetricsReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "ncclwatch_live.XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    root_ = templ;
    fs::create_directories(root_ / "traces");
    fs::create_directories(root_ / "shm");
  }
  void TearDown() override { fs::remove_all(root_); }

  // One step of a 2-rank job on node "n1": rank 1 arrives `late` ms after rank 0.
  void step(uint32_t seq, int64_t t0, int64_t late) {
    for (int rank = 0; rank < 2; ++rank) {
      const int64_t start = t0 + (rank == 1 ? late * kMs : 0);
      const int64_t end = t0 + late * kMs + 2 * kMs;
      const uint32_t corr = seq * 2 + 1;
      append_trace(trace(rank), process("j", "n1", 1000 + rank, rank),
                   {kernel_record(t0 - 10 * kMs, start, false), link_record(corr, 77, seq, start),
                    call_record(Func::kAllReduce, 77, seq, 1 << 22, start, end),
                    kernel_record(start, end, true, corr)});
    }
  }
  std::string trace(int rank) const {
    return (root_ / "traces" / ("ncclwatch.n1." + std::to_string(1000 + rank) + ".trace")).string();
  }
  ExporterOptions options() const {
    ExporterOptions o;
    o.job = "j";
    o.dir = (root_ / "traces").string();
    o.host = "n1";
    o.shm_dir = (root_ / "shm").string();
    o.gpu_lag_ns = 0;
    return o;
  }

  fs::path root_;
};

TEST_F(NodeMetricsReaderTest, ReadsEachRecordOnceAndNamesTheLateRank) {
  for (int rank = 0; rank < 2; ++rank)
    append_trace(trace(rank), process("j", "n1", 1000 + rank, rank), {comm_record(77, rank, 2)});
  // Another node's rank in the same shared directory: its own exporter exports it.
  append_trace((root_ / "traces" / "ncclwatch.n2.5.trace").string(), process("j", "n2", 5, 2),
               {comm_record(77, 2, 4)});
  NodeMetricsReader reader(options());
  step(0, 100 * kMs, 3);
  NodeSnapshot a = reader.poll();
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[0].calls[size_t(MetricOp::kAllReduce)], 1u);
  step(1, 200 * kMs, 3);
  step(2, 300 * kMs, 3);
  NodeSnapshot b = reader.poll();
  ASSERT_EQ(b.ranks.size(), 2u);
  // Incremental: 3 calls in all, not 1 + 3.
  EXPECT_EQ(b.ranks[0].calls[size_t(MetricOp::kAllReduce)], 3u);
  EXPECT_EQ(b.ranks[0].records, 1u + 3 * 4);
  EXPECT_EQ(b.ranks[1].matched_collectives, 3u);
  EXPECT_NEAR(b.ranks[0].peer_wait_s, 0.009, 1e-12);  // 3 ms per collective
  EXPECT_NEAR(b.ranks[1].peer_wait_s, 0.0, 1e-12);
  EXPECT_NEAR(b.ranks[1].lateness_s, 0.009, 1e-12);
  EXPECT_NEAR(b.ranks[0].transfer_s, 0.006, 1e-12);
  EXPECT_GT(b.ranks[0].gpu_compute_s, 0);
  EXPECT_EQ(b.node_matched, 3u);

  // The exposition names the late rank and carries every family.
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text,
                                         MetricsCollectable::families(b, HistogramScope::kRank));
  EXPECT_NE(text.str().find("ncclwatch_lateness_seconds_total{job=\"j\",host=\"n1\",rank=\"1\","
                            "local_rank=\"1\"} 0.009"),
            std::string::npos)
      << text.str();
  EXPECT_EQ(text.str().find("host=\"n2\""), std::string::npos);
}

TEST_F(NodeMetricsReaderTest, LiveSegmentGivesInFlightAgeModeAndDrops) {
  // A segment of a live process (this test's pid) with one thread inside an all-reduce.
  const std::string name = "ncclwatch.j.n1." + std::to_string(getpid());
  const std::string path = (root_ / "shm" / name).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  const std::size_t size = sizeof(format::SegmentHeader) + 4 * sizeof(format::RingSlot);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(base, MAP_FAILED);
  auto* h = new (base) format::SegmentHeader{};
  h->magic = format::kSegmentMagic;
  h->layout_version = format::kLayoutVersion;
  h->header_size = sizeof *h;
  h->record_size = format::kRecordSize;
  h->slot_size = sizeof(format::RingSlot);
  h->capacity = 4;
  h->process = process("j", "n1", getpid(), 3);
  h->state = format::kSegmentStateLive;
  h->mode = 2;
  h->dropped = 17;
  h->losses.names_lost = 5;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  format::CallEntry e{};
  e.t_enter_ns = int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec - 5'000 * kMs;  // 5 s ago
  e.func = static_cast<uint8_t>(Func::kAllReduce);
  e.comm_id = 77;
  h->in_flight[0].owner_tid = 1234;
  format::in_flight_enter(h->in_flight[0], e);
  ExporterOptions o = options();
  o.dir.clear();
  NodeMetricsReader reader(o);
  NodeSnapshot s = reader.poll();
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_TRUE(s.ranks[0].live);
  EXPECT_EQ(s.ranks[0].rank, 3);
  EXPECT_EQ(s.ranks[0].mode, 2u);
  EXPECT_EQ(s.ranks[0].dropped, 17u);
  EXPECT_EQ(s.ranks[0].calls_in_flight, 1u);
  EXPECT_GE(s.ranks[0].oldest_call_in_flight_s, 5.0);
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text,
                                         MetricsCollectable::families(s, HistogramScope::kNode));
  EXPECT_NE(text.str().find("mode=\"lite\"} 1"), std::string::npos) << text.str();
  // Losses by kind: only the non-zero kind gets a series.
  EXPECT_NE(text.str().find("kind=\"names_lost\"} 5"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("kind=\"lite_untimed\""), std::string::npos) << text.str();
  ::munmap(base, size);
  ::close(fd);
}

TEST_F(NodeMetricsReaderTest, FinishedRanksAreForgottenAndPlantedFilesSkipped) {
  append_trace(trace(0), process("j", "n1", 1000, 0), {comm_record(77, 0, 2)},
               format::kTraceStateClosed);
  fs::create_symlink(trace(0), root_ / "traces" / "ncclwatch.n1.9999.trace");
  ExporterOptions o = options();
  o.forget_after_s = 0;
  NodeMetricsReader reader(o);
  NodeSnapshot s = reader.poll();
  EXPECT_EQ(s.ranks.size(), 1u);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("not a regular file"), std::string::npos);
  fs::remove(trace(0));
  usleep(1000);
  s = reader.poll();
  EXPECT_EQ(s.ranks.size(), 0u);
  EXPECT_EQ(reader.tracked_ranks(), 0u);
}

TEST_F(NodeMetricsReaderTest, CountersOfForgottenJobsNeverGoDown) {
  for (int rank = 0; rank < 2; ++rank)
    append_trace(trace(rank), process("j", "n1", 1000 + rank, rank), {comm_record(77, rank, 2)});
  step(0, 100 * kMs, 3);
  ExporterOptions o = options();
  o.forget_after_s = 0;
  NodeMetricsReader reader(o);
  NodeSnapshot s = reader.poll();
  EXPECT_EQ(s.node_matched, 1u);
  fs::remove(trace(0));
  fs::remove(trace(1));
  usleep(1000);
  s = reader.poll();
  EXPECT_EQ(reader.tracked_ranks(), 0u);
  EXPECT_EQ(s.node_matched, 1u);
}

}  // namespace
}  // namespace ncclwatch::live

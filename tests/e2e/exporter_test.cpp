// `ncclwatch exporter` against live 4-rank fake jobs, scraped directly over HTTP: a job whose
// rank 2 has a 3x slower GPU (its kernels start late at every all-reduce), and a hang (rank 2
// stops calling NCCL while the others wait in a collective).
#include <cmath>

#include "exporter_fixture.h"

namespace ncclwatch::e2e {
namespace {

using Exporter = ExporterJob;

TEST_F(Exporter, SlowRankHasTheHighestLatenessWhileTheJobRuns) {
  start_job(FAKE_TRAIN, {"--steps", "100000", "--slow", "2:3", "--nvtx"});
  const int port = start_exporter();
  ASSERT_GT(port, 0) << slurp(root_ / "exporter.log");
  std::vector<Sample> s;
  const bool ready = poll([&] {
    s = scrape(port);
    for (int r = 0; r < 4; ++r) {
      if (!(rank_value(s, "ncclwatch_rank_live", r) == 1)) return false;
      if (!(rank_value(s, "ncclwatch_node_matched_collectives_total", r) >= 40)) return false;
      if (!(rank_value(s, "ncclwatch_gpu_busy_seconds_total", r) > 0)) return false;
    }
    return true;
  });
  ASSERT_TRUE(ready) << slurp(root_ / "job.log") << slurp(root_ / "exporter.log");
  const double slow = rank_value(s, "ncclwatch_lateness_seconds_total", 2);
  for (int r : {0, 1, 3}) {
    EXPECT_GT(slow, 2 * rank_value(s, "ncclwatch_lateness_seconds_total", r)) << r;
    // The others wait for it; it barely waits.
    EXPECT_GT(rank_value(s, "ncclwatch_peer_wait_seconds_total", r),
              rank_value(s, "ncclwatch_peer_wait_seconds_total", 2))
        << r;
  }
  for (int r = 0; r < 4; ++r) {
    EXPECT_GT(rank_value(s, "ncclwatch_nccl_calls_total", r, {{"op", "all_reduce"}}), 0);
    EXPECT_GT(rank_value(s, "ncclwatch_nccl_bytes_total", r, {{"op", "all_reduce"}}), 0);
    EXPECT_EQ(rank_value(s, "ncclwatch_shim_mode", r, {{"mode", "full"}}), 1);
    EXPECT_GT(rank_value(s, "ncclwatch_collective_gpu_seconds_count", r,
                         {{"op", "all_reduce"}, {"size", "16MiB+"}}),
              0);
    EXPECT_GT(rank_value(s, "ncclwatch_gpu_compute_seconds_total", r), 0);
    EXPECT_GE(rank_value(s, "ncclwatch_steps_total", r), 1);
    EXPECT_EQ(rank_value(s, "ncclwatch_dropped_records_total", r, {{"source", "ring"}}), 0);
    // A running job does not look like a hang: kernels are reported within CUPTI's flush period.
    EXPECT_LT(rank_value(s, "ncclwatch_oldest_nccl_kernel_pending_seconds", r), 30);
  }
  // The slow GPU computes longer.
  EXPECT_GT(rank_value(s, "ncclwatch_gpu_compute_seconds_total", 2) /
                rank_value(s, "ncclwatch_gpu_busy_seconds_total", 2),
            rank_value(s, "ncclwatch_gpu_compute_seconds_total", 0) /
                rank_value(s, "ncclwatch_gpu_busy_seconds_total", 0));
}

TEST_F(Exporter, HangRaisesTheInFlightAgeAndTheTimeSinceTheLastCollective) {
  // Rank 2 stops calling NCCL at step 3 (a stuck data loader); ranks 0, 1, 3 wait in #6.
  start_job(FAKE_RANK, {"--steps", "5", "--colls", "2", "--spin", "2:3"});
  const int port = start_exporter();
  ASSERT_GT(port, 0) << slurp(root_ / "exporter.log");
  std::vector<Sample> s;
  const bool hung = poll([&] {
    s = scrape(port);
    for (int r : {0, 1, 3})
      if (!(rank_value(s, "ncclwatch_oldest_call_in_flight_seconds", r) >= 3)) return false;
    return rank_value(s, "ncclwatch_seconds_since_last_collective", 2) >= 3;
  });
  ASSERT_TRUE(hung) << slurp(root_ / "job.log") << slurp(root_ / "exporter.log");
  EXPECT_EQ(rank_value(s, "ncclwatch_calls_in_flight", 2), 0);
  EXPECT_EQ(rank_value(s, "ncclwatch_oldest_call_in_flight_seconds", 2), 0);
  for (int r : {0, 1, 3}) EXPECT_EQ(rank_value(s, "ncclwatch_calls_in_flight", r), 1) << r;
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(rank_value(s, "ncclwatch_shim_mode", r, {{"mode", "host"}}), 1) << r;
}

TEST_F(Exporter, StalledRankLeavesThePeersNcclKernelsPending) {
  // Rank 2 sleeps 10 minutes before step 3 (full mode): ranks 0, 1, 3 launched their NCCL kernels
  // of step 3, which cannot finish.
  start_job(FAKE_TRAIN, {"--steps", "6", "--stall-step", "2:3:600000"});
  const int port = start_exporter();
  ASSERT_GT(port, 0) << slurp(root_ / "exporter.log");
  std::vector<Sample> s;
  const bool pending = poll([&] {
    s = scrape(port);
    for (int r : {0, 1, 3})
      if (!(rank_value(s, "ncclwatch_oldest_nccl_kernel_pending_seconds", r) >= 3)) return false;
    return rank_value(s, "ncclwatch_oldest_nccl_kernel_pending_seconds", 2) == 0;
  });
  ASSERT_TRUE(pending) << slurp(root_ / "job.log") << slurp(root_ / "exporter.log");
  for (int r : {0, 1, 3})
    EXPECT_GE(rank_value(s, "ncclwatch_oldest_call_in_flight_seconds", r), 3) << r;
  EXPECT_EQ(rank_value(s, "ncclwatch_calls_in_flight", 2), 0);
}

}  // namespace
}  // namespace ncclwatch::e2e

#include "live/rank_record_consumer.h"

#include <gtest/gtest.h>

#include "synthetic_records.h"

namespace ncclwatch::live {
namespace {

using namespace testing;
using format::Func;

TEST(RankRecordConsumer, TiesKernelsToCallsInEitherOrderAndFillsTheHistograms) {
  RankRecordConsumer c(/*gpu_lag_ns=*/0);
  c.add(comm_record(5, 0, 4));
  // Usual order: link (at launch), call (at return), kernel (CUPTI, later).
  c.add(link_record(100, 5, 0, 1 * kMs));
  c.add(call_record(Func::kAllReduce, 5, 0, 1 << 20, 1 * kMs, 2 * kMs));  // 4 MiB
  c.add(kernel_record(2 * kMs, 4 * kMs, true, 100));
  // A call that returns after its kernel was reported (blocking fake NCCL, a slow host).
  c.add(link_record(101, 5, 1, 10 * kMs));
  c.add(kernel_record(10 * kMs, 15 * kMs, true, 101));
  c.add(call_record(Func::kAllReduce, 5, 1, 1 << 20, 10 * kMs, 16 * kMs));
  format::Record send = call_record(Func::kSend, 5, 0, 16, 20 * kMs, 21 * kMs);
  send.call.peer = 1;
  c.add(send);
  const RankMetrics& m = c.metrics();
  EXPECT_EQ(m.calls[size_t(MetricOp::kAllReduce)], 2u);
  EXPECT_EQ(m.bytes[size_t(MetricOp::kAllReduce)], 2u * (4u << 20));
  EXPECT_EQ(m.calls[size_t(MetricOp::kSend)], 1u);
  const GpuTimeHistogram& h = m.gpu_time[size_t(MetricOp::kAllReduce)][size_class(4u << 20)];
  EXPECT_EQ(h.count, 2u);
  EXPECT_DOUBLE_EQ(h.sum_s, 0.007);
  EXPECT_EQ(h.buckets[bucket_index(0.002)], 1u);
  EXPECT_EQ(h.buckets[bucket_index(0.005)], 1u);
  EXPECT_EQ(m.last_collective_end_ns, 15 * kMs);  // GPU-timed: the kernel's end
  const auto done = c.take_completed();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].seq, 1u);
  EXPECT_EQ(c.take_new_comms(), std::vector<uint64_t>{5});
}

TEST(RankRecordConsumer, OldestPendingLaunchIsTheNcclKernelNotReportedYet) {
  RankRecordConsumer c(0);
  EXPECT_EQ(c.oldest_pending_launch_ns(), 0);
  c.add(link_record(1, 5, 0, 1 * kMs));
  c.add(link_record(2, 5, 1, 2 * kMs));
  c.add(link_record(0, 5, 2, 3 * kMs));  // graph-captured: no kernel will ever come
  EXPECT_EQ(c.oldest_pending_launch_ns(), 1 * kMs);
  c.add(kernel_record(1 * kMs, 4 * kMs, true, 1));
  EXPECT_EQ(c.oldest_pending_launch_ns(), 2 * kMs);
  c.add(kernel_record(2 * kMs, 5 * kMs, true, 2));
  EXPECT_EQ(c.oldest_pending_launch_ns(), 0);
}

TEST(RankRecordConsumer, GroupLaunchTimesEveryCallOfTheGroupOnThatStream) {
  RankRecordConsumer c(0);
  c.add(call_record(Func::kAllGather, 5, 0, 256, 1 * kMs, 1 * kMs + 10, /*group_id=*/3));
  c.add(call_record(Func::kReduceScatter, 5, 1, 256, 1 * kMs + 20, 1 * kMs + 30, 3));
  c.add(link_record(7, 0, 0, 2 * kMs, /*group_id=*/3));
  c.add(kernel_record(2 * kMs, 3 * kMs, true, 7));
  const RankMetrics& m = c.metrics();
  EXPECT_EQ(m.gpu_time[size_t(MetricOp::kAllGather)][0].count, 1u);
  EXPECT_EQ(m.gpu_time[size_t(MetricOp::kReduceScatter)][0].count, 1u);
}

TEST(RankRecordConsumer, StepsFromNvtxRangesAndTheGpuTimeline) {
  RankRecordConsumer c(0);
  c.add(string_record(1, "ProfilerStep#0"));
  c.add(string_record(2, "forward"));
  c.add(nvtx_record(1, 0, 100 * kMs));
  c.add(nvtx_record(2, 0, 50 * kMs));  // not a step
  c.add(nvtx_record(1, 100 * kMs, 220 * kMs));
  c.add(kernel_record(0, 80 * kMs, false));
  c.add(kernel_record(70 * kMs, 100 * kMs, true));
  c.flush_gpu();
  const RankMetrics& m = c.metrics();
  EXPECT_EQ(m.steps, 2u);
  EXPECT_DOUBLE_EQ(m.step_s, 0.220);
  EXPECT_DOUBLE_EQ(m.last_step_s, 0.120);
  EXPECT_DOUBLE_EQ(c.gpu().compute_s(), 0.080);
  EXPECT_DOUBLE_EQ(c.gpu().exposed_comm_s(), 0.020);
}

TEST(RankRecordConsumer, InvalidRecordsAreCountedNotUsed) {
  RankRecordConsumer c(0);
  format::Record bad = call_record(Func::kAllReduce, 5, 0, 1, 10, 5);  // exits before it enters
  c.add(bad);
  format::Record unknown{};
  unknown.prefix.kind = static_cast<format::RecordKind>(200);
  c.add(unknown);
  EXPECT_EQ(c.metrics().invalid_records, 2u);
  EXPECT_EQ(c.metrics().calls[size_t(MetricOp::kAllReduce)], 0u);
}

TEST(RankRecordConsumer, JoinTablesStayBoundedWhenPartnersNeverCome) {
  RankRecordConsumer c(0);
  for (uint32_t i = 0; i < 200000; ++i) c.add(link_record(i, 5, i, i));  // kernels never come
  for (uint32_t i = 0; i < 200000; ++i)
    c.add(call_record(Func::kAllReduce, 6, i, 1, i, i + 1));  // kernels never come
  EXPECT_GT(c.unlinked(), 200000u);
}

}  // namespace
}  // namespace ncclwatch::live

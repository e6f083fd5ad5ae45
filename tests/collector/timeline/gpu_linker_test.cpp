// link_calls_to_gpu on synthetic rank traces: every way a call can find (or not find) its GPU
// work.
#include "timeline/gpu_linker.h"

#include <gtest/gtest.h>

namespace ncclwatch::timeline {
namespace {

using format::Func;
using model::CallEvent;
using model::KernelEvent;
using model::RankTrace;

CallEvent call(Func f, uint64_t comm, uint64_t seq, uint64_t stream, int64_t enter,
               uint32_t group = 0) {
  CallEvent c;
  c.func = f;
  c.comm_id = comm;
  c.seq = seq;
  c.stream = stream;
  c.enter_ns = enter;
  c.exit_ns = enter + 10;
  c.group_id = group;
  return c;
}
KernelEvent kernel(int64_t start, int64_t end, uint32_t corr, uint32_t stream, bool nccl = true) {
  KernelEvent k;
  k.start_ns = start;
  k.end_ns = end;
  k.correlation = corr;
  k.stream = stream;
  k.nccl = nccl;
  return k;
}
format::KernelLinkRecord link(Func f, uint64_t comm, uint32_t seq, uint32_t group, uint64_t stream,
                              uint32_t corr, int64_t t) {
  format::KernelLinkRecord l{};
  l.prefix.kind = format::RecordKind::kKernelLink;
  l.prefix.u8a = static_cast<uint8_t>(f);
  l.comm_id = comm;
  l.seq = seq;
  l.group_id = group;
  l.stream = stream;
  l.correlation = corr;
  l.t_ns = t;
  return l;
}

TEST(GpuLinker, CorrelationTiesCallAndKernelBothWays) {
  RankTrace t;
  t.calls = {call(Func::kAllReduce, 7, 0, 0x100, 1000), call(Func::kAllReduce, 7, 1, 0x100, 2000)};
  t.kernels = {kernel(1500, 1900, 11, 3), kernel(2500, 2600, 12, 3),
               kernel(1200, 5000, 13, 4, false)};
  t.links = {link(Func::kAllReduce, 7, 0, 0, 0x100, 11, 1005),
             link(Func::kAllReduce, 7, 1, 0, 0x100, 12, 2005)};
  auto s = link_calls_to_gpu(t);
  EXPECT_EQ(s.by_correlation, 2u);
  EXPECT_EQ(t.calls[0].kernel, 0);
  EXPECT_EQ(t.calls[0].gpu_start_ns, 1500);
  EXPECT_EQ(t.calls[0].gpu_end_ns, 1900);
  EXPECT_EQ(t.calls[1].kernel, 1);
  EXPECT_EQ(t.kernels[0].call, 0);
  EXPECT_EQ(t.kernels[1].call, 1);
  EXPECT_EQ(t.kernels[2].call, -1);  // compute stays unlinked
  EXPECT_EQ(s.calls_without_gpu, 0u);
  EXPECT_EQ(s.nccl_kernels_without_call, 0u);
}

TEST(GpuLinker, GroupLaunchesGoToEveryCallOfTheGroupOnThatStream) {
  RankTrace t;
  t.calls = {call(Func::kAllReduce, 7, 0, 0x100, 1000, 5),
             call(Func::kAllGather, 8, 0, 0x100, 1010, 5),
             call(Func::kAllReduce, 9, 0, 0x200, 1020, 5)};
  t.kernels = {kernel(1500, 1900, 21, 3), kernel(1900, 2400, 22, 3), kernel(1600, 1700, 23, 4)};
  t.links = {link(Func::kGroupEnd, 0, 0, 5, 0x100, 21, 1100),
             link(Func::kGroupEnd, 0, 0, 5, 0x100, 22, 1101),
             link(Func::kGroupEnd, 0, 0, 5, 0x200, 23, 1102)};
  link_calls_to_gpu(t);
  EXPECT_EQ(t.calls[0].gpu_start_ns, 1500);
  EXPECT_EQ(t.calls[0].gpu_end_ns, 2400);
  EXPECT_EQ(t.calls[1].gpu_start_ns, 1500);
  EXPECT_EQ(t.calls[1].gpu_end_ns, 2400);
  EXPECT_EQ(t.calls[2].gpu_start_ns, 1600);
  EXPECT_EQ(t.calls[2].gpu_end_ns, 1700);
  EXPECT_EQ(t.calls[2].kernel, 2);
  EXPECT_GE(t.kernels[1].call, 0);
}

TEST(GpuLinker, P2pSeqsRepeatedAcrossPeersAreToldApartByLaunchTime) {
  RankTrace t;
  auto a = call(Func::kSend, 7, 0, 0x100, 1000);
  a.peer = 1;
  auto b = call(Func::kSend, 7, 0, 0x100, 3000);
  b.peer = 2;
  t.calls = {a, b};
  t.kernels = {kernel(3100, 3200, 31, 3), kernel(1100, 1200, 32, 3)};
  t.links = {link(Func::kSend, 7, 0, 0, 0x100, 31, 3005),
             link(Func::kSend, 7, 0, 0, 0x100, 32, 1005)};
  link_calls_to_gpu(t);
  EXPECT_EQ(t.calls[0].gpu_start_ns, 1100);
  EXPECT_EQ(t.calls[1].gpu_start_ns, 3100);
}

TEST(GpuLinker, LiteModeEventsTimeCallsAndGroups) {
  RankTrace t;
  t.calls = {call(Func::kAllReduce, 7, 0, 0x100, 1000),
             call(Func::kAllReduce, 7, 1, 0x100, 2000, 9),
             call(Func::kReduceScatter, 8, 0, 0x100, 2010, 9)};
  format::CollGpuRecord one{}, group{};
  one.prefix.u8a = static_cast<uint8_t>(Func::kAllReduce);
  one.comm_id = 7;
  one.seq = 0;
  one.start_ns = 1100;
  one.end_ns = 1300;
  group.prefix.u8a = static_cast<uint8_t>(Func::kGroupEnd);
  group.group_id = 9;
  group.stream = 0x100;
  group.start_ns = 2100;
  group.end_ns = 2900;
  t.coll_gpu = {one, group};
  auto s = link_calls_to_gpu(t);
  EXPECT_EQ(s.by_events, 3u);
  EXPECT_EQ(t.calls[0].gpu_start_ns, 1100);
  EXPECT_EQ(t.calls[0].gpu_end_ns, 1300);
  EXPECT_EQ(t.calls[0].kernel, -1);  // no kernel in lite mode, only the interval
  EXPECT_EQ(t.calls[2].gpu_start_ns, 2100);
  EXPECT_EQ(t.calls[2].gpu_end_ns, 2900);
}

TEST(GpuLinker, NonBlockingLaunchesPairInOrderOnTheirStream) {
  RankTrace t;
  t.calls = {call(Func::kAllReduce, 7, 0, 0x100, 1000), call(Func::kAllReduce, 7, 1, 0x100, 2000),
             call(Func::kAllReduce, 7, 2, 0x100, 3000)};
  t.kernels = {kernel(1200, 1400, 41, 3), kernel(2200, 2400, 42, 3), kernel(3300, 3400, 43, 3)};
  // Orphan launches (NCCL's thread) for the first two; the third kernel has no link at all but
  // runs on the same CUPTI stream.
  t.links = {link(Func::kUnknown, 0, 0, 0, 0x100, 41, 1100),
             link(Func::kUnknown, 0, 0, 0, 0x100, 42, 2100)};
  auto s = link_calls_to_gpu(t);
  EXPECT_EQ(s.by_order, 3u);
  EXPECT_EQ(t.calls[0].gpu_start_ns, 1200);
  EXPECT_EQ(t.calls[1].gpu_start_ns, 2200);
  EXPECT_EQ(t.calls[2].gpu_start_ns, 3300);
  EXPECT_EQ(t.kernels[2].call, 2);
}

// A DeepEP kernel on the stream of NCCL calls is communication, but runs no NCCL call: the
// unlinked NCCL kernel after it is the call's.
TEST(GpuLinker, OtherCommunicationFamiliesAreNotPairedWithNcclCalls) {
  RankTrace t;
  t.calls = {call(Func::kAllReduce, 7, 0, 0x100, 1000)};
  t.kernels = {kernel(1100, 1150, 61, 3), kernel(1200, 1400, 0, 3)};
  t.kernels[0].family = model::CommFamily::kDeepEp;
  t.kernels[1].family = model::CommFamily::kNccl;
  t.links = {link(Func::kUnknown, 0, 0, 0, 0x100, 61, 1050)};  // names the stream
  auto s = link_calls_to_gpu(t);
  EXPECT_EQ(s.by_order, 1u);
  EXPECT_EQ(t.calls[0].gpu_start_ns, 1200);
  EXPECT_EQ(t.kernels[0].call, -1);
  EXPECT_EQ(t.kernels[1].call, 0);
  EXPECT_EQ(s.nccl_kernels_without_call, 0u);
}

TEST(GpuLinker, KernelNeverPairedWithALaterCall) {
  RankTrace t;
  t.calls = {call(Func::kAllReduce, 7, 0, 0x100, 5000)};
  t.kernels = {kernel(1000, 1100, 51, 3)};
  t.links = {link(Func::kUnknown, 0, 0, 0, 0x100, 51, 900)};
  auto s = link_calls_to_gpu(t);
  EXPECT_FALSE(t.calls[0].has_gpu());
  EXPECT_EQ(s.calls_without_gpu, 1u);
  EXPECT_EQ(s.nccl_kernels_without_call, 1u);
}

TEST(GpuLinker, NoKernelAndCapturedCallsStayWithout) {
  RankTrace t;
  auto single = call(Func::kAllReduce, 7, 0, 0x100, 1000);
  single.flags = format::kCallNoKernel;
  t.calls = {single, call(Func::kAllReduce, 8, 0, 0x100, 2000)};
  t.kernels = {kernel(2500, 2600, 0, 3)};
  auto captured = link(Func::kAllReduce, 8, 0, 0, 0x100, 0, 2005);
  captured.prefix.flags = format::kCallGraphCaptured;
  // A link elsewhere on that stream names the CUPTI stream, so order pairing could apply.
  t.kernels.push_back(kernel(500, 600, 61, 3));
  t.calls.push_back(call(Func::kAllReduce, 9, 0, 0x100, 400));
  t.links = {captured, link(Func::kAllReduce, 9, 0, 0, 0x100, 61, 405)};
  auto s = link_calls_to_gpu(t);
  EXPECT_EQ(s.captured, 1u);
  EXPECT_TRUE(t.calls[1].flags & format::kCallGraphCaptured);
  EXPECT_FALSE(t.calls[0].has_gpu());
  EXPECT_FALSE(t.calls[1].has_gpu());
  EXPECT_EQ(t.calls[2].gpu_start_ns, 500);
}

TEST(GpuLinker, LinksToUnknownKernelsOrCallsAreIgnoredAndPresetCallsKept) {
  RankTrace t;
  auto preset = call(Func::kAllReduce, 7, 0, 0x100, 1000);
  preset.kernel = 0;
  preset.gpu_start_ns = 10;
  preset.gpu_end_ns = 20;
  t.calls = {preset};
  t.kernels = {kernel(1500, 1900, 71, 3)};
  t.links = {link(Func::kAllReduce, 7, 0, 0, 0x100, 71, 1005),
             link(Func::kAllReduce, 99, 0, 0, 0x100, 72, 1005),
             link(Func::kAllReduce, 7, 0, 0, 0x100, 999, 1005)};
  link_calls_to_gpu(t);
  EXPECT_EQ(t.calls[0].gpu_start_ns, 10);
  EXPECT_EQ(t.calls[0].gpu_end_ns, 20);
}

}  // namespace
}  // namespace ncclwatch::timeline

// Calls made from communication kernels, and their numbering across ranks whose captures began
// and ended at different collectives.
#include "kernels/kernel_calls.h"

#include <gtest/gtest.h>

#include <string>

namespace ncclwatch::kernels {
namespace {

using format::Func;
using model::CommFamily;

constexpr const char* kDispatch = "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)";
constexpr const char* kCombine = "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(int4*)";
constexpr const char* kNotify = "void deep_ep::intranode::notify_dispatch<8>(int const*, int*)";

uint32_t name(model::RankTrace& t, const std::string& n) {
  for (uint32_t i = 0; i < t.names.size(); ++i)
    if (t.names[i] == n) return i;
  t.names.push_back(n);
  return static_cast<uint32_t>(t.names.size() - 1);
}

// A kernel and its launch: the launch at `t_us`, the kernel 5 µs later for `dur_us`.
void add_kernel(model::RankTrace& t, const std::string& n, uint32_t stream, int64_t t_us,
                int64_t dur_us, CommFamily family) {
  const auto corr = static_cast<uint32_t>(t.kernels.size() + 100);
  model::KernelEvent k;
  k.start_ns = (t_us + 5) * 1000;
  k.end_ns = (t_us + 5 + dur_us) * 1000;
  k.stream = stream;
  k.name = name(t, n);
  k.correlation = corr;
  k.family = family;
  k.nccl = family != CommFamily::kNone;
  t.kernels.push_back(k);
  t.launches.push_back({t_us * 1000, (t_us + 2) * 1000, 0, corr, 1});
}

// Step s (1 ms apart): compute on stream 7, then dispatch, notify and combine on stream 20.
// `end_skew_us` moves this rank's kernel ends (a late rank's kernels end at the same time as
// everyone's; here every rank's collective ends together, as on one host).
model::RankTrace ep_rank(int32_t rank, int first_step, int last_step) {
  model::RankTrace t;
  t.info.rank = rank;
  t.info.world_size = 3;
  t.info.source = "rank" + std::to_string(rank);
  for (int s = first_step; s <= last_step; ++s) {
    const int64_t base = s * 1000;
    add_kernel(t, "gemm", 7, base, 300, CommFamily::kNone);
    add_kernel(t, kDispatch, 20, base + 100, 200 + s % 3 * 10, CommFamily::kDeepEp);
    add_kernel(t, kNotify, 20, base + 400, 20, CommFamily::kDeepEp);
    add_kernel(t, kCombine, 20, base + 500, 150, CommFamily::kDeepEp);
  }
  return t;
}

TEST(KernelCalls, OneCallPerKernelWhoseCollectiveIsKnown) {
  model::RankTrace t = ep_rank(0, 0, 3);
  const KernelCallStats stats = add_kernel_calls(t);
  EXPECT_EQ(stats.calls, 8u);          // dispatch + combine, 4 steps
  EXPECT_EQ(stats.no_collective, 4u);  // notify_dispatch: communication, no call
  EXPECT_EQ(stats.comms, 1u);
  ASSERT_EQ(t.comms.size(), 1u);
  EXPECT_TRUE(t.comms[0].from_kernels);
  EXPECT_EQ(t.comms[0].id, kernel_comm_id(CommFamily::kDeepEp, 0));
  EXPECT_EQ(t.comms[0].name, "DeepEP kernels, stream #0");
  ASSERT_EQ(t.calls.size(), 8u);
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    const model::CallEvent& c = t.calls[i];
    EXPECT_EQ(c.seq, i);
    EXPECT_EQ(c.func, Func::kAlltoAll);
    EXPECT_EQ(c.comm_id, t.comms[0].id);
    ASSERT_GE(c.kernel, 0);
    const model::KernelEvent& k = t.kernels[static_cast<std::size_t>(c.kernel)];
    EXPECT_EQ(k.call, static_cast<int32_t>(i));
    EXPECT_EQ(c.gpu_start_ns, k.start_ns);
    EXPECT_EQ(c.gpu_end_ns, k.end_ns);
    EXPECT_EQ(c.enter_ns + 5000, k.start_ns);  // the launch
    if (i > 0) {
      EXPECT_LT(t.calls[i - 1].enter_ns, c.enter_ns);
    }
  }
}

TEST(KernelCalls, StreamsWithCallsAreLeftAlone) {
  model::RankTrace t = ep_rank(0, 0, 1);
  // An NCCL kernel its all-reduce call already owns; and one more NCCL kernel on that stream.
  add_kernel(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 13, 5000, 50, CommFamily::kNccl);
  add_kernel(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 13, 6000, 50, CommFamily::kNccl);
  model::CallEvent c;
  c.func = Func::kAllReduce;
  c.kernel = static_cast<int32_t>(t.kernels.size() - 2);
  t.calls.push_back(c);
  t.kernels[t.kernels.size() - 2].call = 0;
  const KernelCallStats stats = add_kernel_calls(t);
  EXPECT_EQ(stats.calls, 4u);  // the DeepEP ones only
  EXPECT_EQ(t.kernels.back().call, -1);
}

TEST(KernelCalls, NumberingLinesUpAcrossRanksAndCutsTheEnds) {
  model::JobTrace job;
  job.ranks.push_back(ep_rank(0, 0, 9));
  job.ranks.push_back(ep_rank(1, 1, 9));  // its capture began a step later
  job.ranks.push_back(ep_rank(2, 0, 8));  // ended a step earlier
  for (auto& r : job.ranks) add_kernel_calls(r);
  std::vector<model::InputProblem> notes;
  align_kernel_comms(job, notes);
  // Steps 1..8 are on every rank: 2 calls each; the same step has the same seq everywhere.
  for (const auto& r : job.ranks) {
    ASSERT_EQ(r.calls.size(), 16u) << r.info.source;
    for (std::size_t i = 0; i < r.calls.size(); ++i) {
      const model::CallEvent& c = r.calls[i];
      EXPECT_EQ(c.seq, i);
      const int64_t step = c.gpu_start_ns / 1'000'000;
      EXPECT_EQ(static_cast<uint64_t>((step - 1) * 2 + (i % 2)), c.seq) << r.info.source;
    }
    ASSERT_EQ(r.comms.size(), 1u);
    EXPECT_EQ(r.comms[0].nranks, 3);
    EXPECT_EQ(r.comms[0].rank, r.info.rank);
    // A dropped call's kernel keeps its time and loses its call.
    std::size_t with_call = 0;
    for (const auto& k : r.kernels) {
      with_call += k.call >= 0;
      if (k.call >= 0) {
        EXPECT_EQ(r.calls[static_cast<std::size_t>(k.call)].kernel, &k - r.kernels.data());
      }
    }
    EXPECT_EQ(with_call, 16u);
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].message.find("DeepEP kernels, stream #0"), std::string::npos);
  EXPECT_NE(notes[0].message.find("rank 1 by +2"), std::string::npos) << notes[0].message;
  EXPECT_NE(notes[0].message.find("8 calls at the ends"), std::string::npos) << notes[0].message;
}

TEST(KernelCalls, AlignedRanksGetNoNote) {
  model::JobTrace job;
  job.ranks.push_back(ep_rank(0, 0, 4));
  job.ranks.push_back(ep_rank(1, 0, 4));
  for (auto& r : job.ranks) add_kernel_calls(r);
  std::vector<model::InputProblem> notes;
  align_kernel_comms(job, notes);
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(job.ranks[1].calls.size(), 10u);
  EXPECT_EQ(job.ranks[1].comms[0].nranks, 2);
}

}  // namespace
}  // namespace ncclwatch::kernels

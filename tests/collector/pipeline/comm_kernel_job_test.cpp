// A PyTorch-profiler job whose all-to-all runs in DeepEP's kernels (no NCCL call at all): the
// kernels are communication, their calls are matched across ranks, and overlap, stragglers and
// the report's wording agree with a computation done here from the trace's own layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kineto/kineto_loader.h"
#include "pipeline/pipeline.h"
#include "report/text_renderer.h"
#include "trace_files.h"

namespace ncclwatch::pipeline {
namespace {

namespace kt = kineto::testing;

constexpr int kRanks = 4;
constexpr int kSteps = 12;
constexpr int64_t kStepUs = 10'000;
constexpr int64_t kBaseUs = 1'700'000'000'000'000;
constexpr int kLateRank = 2;
constexpr int64_t kLateUs = 800;

struct Span {
  int64_t start, end;  // µs from the trace's start
  bool comm;
};

// One rank's GPU activity: per step, 4 GEMMs on stream 7; DeepEP's notify_dispatch, dispatch and
// combine on stream 24. Dispatch is an all-to-all: it ends when the last rank arrived, so the
// late rank's kernel starts later and ends with everyone's.
std::vector<std::pair<std::string, Span>> layout(int rank) {
  std::vector<std::pair<std::string, Span>> out;
  for (int s = 0; s < kSteps; ++s) {
    const int64_t b = s * kStepUs;
    for (int k = 0; k < 4; ++k)
      out.push_back({"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn",
                     {b + k * 2000, b + k * 2000 + 1500, false}});
    out.push_back(
        {"void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int const*, int*)",
         {b + 900, b + 950, true}});
    const int64_t delay = rank == kLateRank ? kLateUs : 0;
    out.push_back({"void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, float*, int*)",
                   {b + 1010 + delay, b + 1010 + kLateUs + 300, true}});
    out.push_back({"void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(__nv_bfloat16*)",
                   {b + 5010, b + 5610, true}});
  }
  return out;
}

std::string rank_trace(int rank) {
  std::vector<std::string> ev;
  int corr = 1000;
  for (int s = 0; s < kSteps; ++s) {
    ev.push_back(fmt::format(
        R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":77,"tid":77,"ts":{},"dur":{}}})",
        s, kBaseUs + s * kStepUs, kStepUs - 100));
  }
  for (const auto& [name, span] : layout(rank)) {
    ++corr;
    const int stream = span.comm ? 24 : 7;
    ev.push_back(fmt::format(
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":77,"tid":77,"ts":{},"dur":4,"args":{{"correlation":{},"External id":{}}}}})",
        kBaseUs + span.start - 10, corr, corr));
    ev.push_back(fmt::format(
        R"({{"ph":"X","cat":"kernel","name":"{}","pid":0,"tid":{},"ts":{},"dur":{},"args":{{"device":{},"stream":{},"correlation":{},"External id":{}}}}})",
        name, stream, kBaseUs + span.start, span.end - span.start, rank, stream, corr, corr));
  }
  return kt::trace_doc(
      ev, fmt::format(R"({{"backend":"nccl","rank":{},"world_size":{}}})", rank, kRanks));
}

// |a ∩ b| and |a| of two lists of intervals, by brute force over µs (independent of
// analysis::IntervalSet).
int64_t covered(const std::vector<Span>& spans, int64_t from, int64_t to,
                const std::vector<Span>* also = nullptr) {
  int64_t n = 0;
  for (int64_t t = from; t < to; ++t) {
    auto in = [t](const std::vector<Span>& v) {
      return std::any_of(v.begin(), v.end(),
                         [t](const Span& s) { return s.start <= t && t < s.end; });
    };
    n += in(spans) && (also == nullptr || in(*also));
  }
  return n;
}

TEST(CommKernelJob, DeepEpAllToAllIsCommunicationWithOverlapAndStraggler) {
  kt::TempDir tmp;
  std::vector<std::string> files;
  for (int r = 0; r < kRanks; ++r) {
    files.push_back(tmp.path(fmt::format("rank{}.json", r)));
    kt::write_file(files.back(), rank_trace(r));
  }
  model::JobTrace job = kineto::load_job(files);
  ASSERT_EQ(job.ranks.size(), static_cast<std::size_t>(kRanks));
  EXPECT_TRUE(job.problems.empty());
  PipelineOptions options;
  options.link_gpu = false;
  PipelineResult res = run_pipeline(job, options);
  const std::string text = report::render_text(res.report);
  const auto& j = res.report.json;

  // Calls from the dispatch and combine kernels (notify_dispatch has no collective), matched.
  for (const auto& r : job.ranks) EXPECT_EQ(r.calls.size(), 2u * kSteps);
  EXPECT_NE(text.find("all " + std::to_string(2 * kSteps) + " instances matched on every rank"),
            std::string::npos)
      << text;
  ASSERT_EQ(j["comm_kernels"].size(), 1u);
  EXPECT_EQ(j["comm_kernels"][0]["family"], "DeepEP");
  EXPECT_EQ(j["comm_kernels"][0]["kernels"], 3 * kSteps * kRanks);
  EXPECT_NE(text.find("communication kernels: DeepEP"), std::string::npos) << text;
  EXPECT_EQ(text.find("host-only"), std::string::npos) << text;

  // Overlap over the steady steps (the first is warm-up), against a count over the layout; the
  // exposed part (comm not under compute) splits into waiting for the late rank and transfer.
  const auto& overlap = j["overlap"];
  ASSERT_EQ(overlap.size(), static_cast<std::size_t>(kRanks));
  for (int r = 0; r < kRanks; ++r) {
    std::vector<Span> comm, compute;
    for (const auto& [name, span] : layout(r)) (span.comm ? comm : compute).push_back(span);
    const int64_t from = kStepUs, to = kSteps * kStepUs;  // steps 2..kSteps
    const int64_t comm_us = covered(comm, from, to);
    const int64_t over_us = covered(comm, from, to, &compute);
    const auto& o = overlap[static_cast<std::size_t>(r)];
    const double steps = o["steps"].get<double>();
    EXPECT_EQ(steps, kSteps - 1);
    EXPECT_NEAR(o["overlap_pct"].get<double>(), 100.0 * over_us / comm_us, 0.01) << "rank " << r;
    EXPECT_NEAR(o["comm_us"].get<double>(), comm_us, 0.5) << "rank " << r;
    EXPECT_NEAR(o["exposed_us"].get<double>(), comm_us - over_us, 0.5) << "rank " << r;
    // Every rank but the late one waits kLateUs at each dispatch; wait = min(that, exposed).
    const double peer_wait = r == kLateRank ? 0.0 : kLateUs * steps;
    EXPECT_NEAR(o["peer_wait_us"].get<double>(), peer_wait, 0.5) << "rank " << r;
    EXPECT_NEAR(o["wait_us"].get<double>(), std::min<double>(peer_wait, comm_us - over_us), 0.5)
        << "rank " << r;
  }
  // The late rank is the straggler, late at the first all-to-all of every step.
  ASSERT_GE(j["stragglers"].size(), 1u) << text;
  EXPECT_EQ(j["stragglers"][0]["rank"], kLateRank) << text;
  EXPECT_NEAR(j["stragglers"][0]["lateness_us"].get<double>(), kLateUs, 1.0);
  EXPECT_NE(text.find("rank 2 is 800 µs late at the first all-to-all of every step"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace ncclwatch::pipeline

// `ncclwatch reduce` then `report` (pipeline/node_merge.h): the report merged from node files is
// the report from the traces but for the note saying so, with the traces beside the node files or
// without them; a node file whose traces changed is not used for them (a problem line says so);
// a node file planted as a symlink is never followed; ranks with capture windows stay with their
// traces.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "node_note.h"
#include "pipeline/report_job.h"
#include "process.h"
#include "reduce/node_reduce.h"
#include "trace_fixture.h"

namespace ncclwatch::reduce {
namespace {

using format::Func;
using format::Record;
namespace fs = std::filesystem;
namespace tt = trace::testing;

constexpr int64_t kMs = 1'000'000;
constexpr int kSteps = 10;

// Rank r of 4 (2 per host): per step a compute kernel, then an all-reduce with its launch link and
// NCCL kernel; rank 3 computes 4 ms longer. `extra`: one more kernel at the end (a trace that
// changed).
std::vector<Record> rank_records(int r, bool window, bool extra = false) {
  std::vector<Record> rs = {tt::make_identity(r, 4, r % 2, r % 2),
                            tt::make_clock(kMs, 1'764'806'400 * 1'000'000'000LL, 10),
                            tt::make_comm(0x42, 4, r, kMs)};
  for (const Record& c : tt::make_string(1, "sgemm_kernel")) rs.push_back(c);
  const int64_t slow = r == 3 ? 4 * kMs : 0;
  for (int s = 0; s < kSteps; ++s) {
    const int64_t t0 = 10 * kMs + s * 20 * kMs;
    const auto seq = static_cast<uint32_t>(s);
    const uint32_t corr = 100 + 2 * seq;
    rs.push_back(tt::make_kernel(t0, t0 + 10 * kMs + slow, corr + 1, 1, false));
    const int64_t enter = t0 + 11 * kMs + slow;
    rs.push_back(tt::make_call(Func::kAllReduce, 0x42, seq, enter, enter + 50'000, 1 << 20));
    rs.push_back(tt::make_link(enter + 10'000, 0x42, seq, corr));
    rs.push_back(tt::make_kernel(enter + 20'000, t0 + 16 * kMs, corr, 0, true));
  }
  if (extra) rs.push_back(tt::make_kernel(900 * kMs, 901 * kMs, 999, 1, false));
  if (window) {
    const int64_t a = 10 * kMs + 4 * 20 * kMs, b = 10 * kMs + 8 * 20 * kMs;
    rs.push_back(tt::make_window(format::WindowEvent::kOpen, 1, format::WindowTrigger::kOnDemand, a,
                                 0, 4, 8));
    rs.push_back(tt::make_window(format::WindowEvent::kClose, 1, format::WindowTrigger::kOnDemand,
                                 a, b, 4, 8));
  }
  return rs;
}

std::string host_of(int r) {
  return r < 2 ? "node-a" : "node-b";
}

void write_job(const std::string& dir, bool window = false) {
  for (int r = 0; r < 4; ++r)
    tt::write_rank(dir, "job", host_of(r), 100 + r, r, 4, rank_records(r, window));
}

// report_job's text and JSON without the node-file note (node_note.h); `note` gets the note's
// line. Findings on one line each (COLUMNS: this test's threads are the only ones).
std::string report(const std::string& dir, std::string* note = nullptr) {
  setenv("COLUMNS", "100000", 1);
  pipeline::ReportRequest req;
  req.dir = dir;
  req.json_path = dir + ".report.json";
  req.progress = false;
  req.unicode = false;
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  pipeline::report_job(req, out, err);
  test_support::slurp(err);
  const std::string text = test_support::slurp(out);
  std::FILE* json = std::fopen(req.json_path.c_str(), "r");
  const std::string json_text = json ? test_support::slurp(json) : "";
  if (note != nullptr) {
    const std::size_t at = text.find(test_support::kNodeFileNote);
    *note = at == std::string::npos
                ? ""
                : text.substr(text.rfind('\n', at) + 1, text.find('\n', at) - text.rfind('\n', at));
  }
  return test_support::without_node_note(text) +
         test_support::without_node_note(nlohmann::json::parse(json_text, nullptr, false)).dump(1);
}

ReduceResult reduce_all(const std::string& dir) {
  ReduceOptions options;
  options.all_hosts = true;
  return reduce_directory(dir, options);
}

TEST(NodeMerge, TheMergedReportIsTheTracesReport) {
  tt::TempDir dir;
  write_job(dir.path());
  const std::string traces = report(dir.path());
  ASSERT_NE(traces.find("\"kernels_analysis\""), std::string::npos) << traces;
  const ReduceResult reduced = reduce_all(dir.path());
  ASSERT_EQ(reduced.error, "");
  ASSERT_EQ(reduced.nodes.size(), 2u);
  EXPECT_EQ(reduced.nodes[0].host, "node-a");
  EXPECT_EQ(reduced.nodes[0].ranks, 2u);
  EXPECT_GT(reduced.nodes[0].node_bytes, 0u);
  EXPECT_LT(reduced.nodes[0].node_bytes, reduced.nodes[0].trace_bytes);
  std::string note;
  EXPECT_EQ(report(dir.path(), &note), traces);
  EXPECT_NE(note.find("4 of 4 rank(s) read from node files (ncclwatch.node-a.job.node, "
                      "ncclwatch.node-b.job.node)"),
            std::string::npos)
      << note;

  // The traces stayed on their nodes: the node files alone.
  tt::TempDir away;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().extension() == ".trace")
      fs::rename(e.path(), away.path() + "/" + e.path().filename().string());
  }
  note.clear();
  EXPECT_EQ(report(dir.path(), &note), traces);
  EXPECT_NE(note.find("4 of them without their trace here"), std::string::npos) << note;
}

// A whole-run job (NCCLWATCH_DETAIL=all) with a step summary per step. `bad_rank`'s summaries
// all fail validation (the GPU end of the step's first collective before its entry: seen on a
// loaded machine, where the fake GPU runs on a virtual clock); `window_last`: the whole-run
// window's open record comes after the summaries (its open evicted or dropped: the loader keeps
// none of them, and the history must come from the files).
void write_summarized_job(const std::string& dir, int bad_rank, bool window_last) {
  for (int r = 0; r < 4; ++r) {
    std::vector<Record> rs = rank_records(r, false);
    std::vector<Record> summaries;
    for (int s = 0; s < kSteps; ++s) {
      const int64_t t0 = 10 * kMs + s * 20 * kMs;
      const int64_t enter = t0 + 11 * kMs + (r == 3 ? 4 * kMs : 0);
      const int64_t sync = r == bad_rank ? enter - kMs : t0 + 16 * kMs;
      summaries.push_back(tt::make_step(static_cast<uint32_t>(s + 1), t0, 20'000,
                                        static_cast<uint32_t>(s), enter, sync, 10'000, 1'000, 0));
    }
    const Record open =
        tt::make_window(format::WindowEvent::kOpen, 0, format::WindowTrigger::kWholeRun, 5 * kMs, 0,
                        1, format::kNoStep);
    if (!window_last) rs.insert(rs.begin() + 3, open);
    // NCCLWATCH_SUMMARY_GPU=auto decided to keep GPU timing on: the history says why, whether
    // its summaries were kept by the loader or read from the files.
    Record gpu{};
    gpu.gpu_timing.prefix.kind = format::RecordKind::kGpuTiming;
    gpu.gpu_timing.prefix.u8a = 1;
    gpu.gpu_timing.prefix.u8b = static_cast<uint8_t>(format::GpuTimingReason::kAuto);
    gpu.gpu_timing.t_ns = 9 * kMs;
    gpu.gpu_timing.step_ns = 20 * kMs;
    gpu.gpu_timing.units_per_step_x100 = 300;
    gpu.gpu_timing.unit_cost_ns = 2000;
    gpu.gpu_timing.measured_steps = 20;
    rs.push_back(gpu);
    rs.insert(rs.end(), summaries.begin(), summaries.end());
    if (window_last) rs.push_back(open);
    tt::write_rank(dir, "job", host_of(r), 100 + r, r, 4, rs);
  }
}

// The history of node files alone is the traces' history: every rank's summaries travel in its
// node file, including "none valid" (a rank whose every summary was refused: the history used to
// be read from the files then, and without them it vanished from the report). Where the loader
// kept none because the window opened after them, the traces beside the node files give them.
TEST(NodeMerge, TheHistoryOfNodeFilesAloneIsTheTraces) {
  for (const bool window_last : {false, true}) {
    SCOPED_TRACE(window_last ? "window opened last" : "window opened first");
    tt::TempDir dir;
    write_summarized_job(dir.path(), 0, window_last);
    const std::string traces = report(dir.path());
    ASSERT_NE(traces.find("== History"), std::string::npos) << traces;
    EXPECT_NE(traces.find("4 ranks, 10 steps (1-10)"), std::string::npos) << traces;
    EXPECT_NE(traces.find("auto: 3 kernels/step x 2 us"), std::string::npos) << traces;
    EXPECT_NE(traces.find("step event before the step starts"), std::string::npos);
    ASSERT_EQ(reduce_all(dir.path()).error, "");
    EXPECT_EQ(report(dir.path()), traces);
    if (window_last) continue;  // the summaries are in the traces only
    tt::TempDir away;
    for (const auto& e : fs::directory_iterator(dir.path())) {
      if (e.path().extension() == ".trace")
        fs::rename(e.path(), away.path() + "/" + e.path().filename().string());
    }
    EXPECT_EQ(report(dir.path()), traces);
  }
}

TEST(NodeMerge, ARankWhoseTraceChangedIsReadFromItsTrace) {
  tt::TempDir dir;
  write_job(dir.path());
  ASSERT_EQ(reduce_all(dir.path()).error, "");
  tt::write_rank(dir.path(), "job", host_of(1), 101, 1, 4, rank_records(1, false, true));
  std::string note;
  const std::string merged = report(dir.path(), &note);
  EXPECT_NE(note.find("3 of 4 rank(s)"), std::string::npos) << note;
  EXPECT_NE(merged.find("node file is stale"), std::string::npos) << merged;
  // Reduced again, the node files serve every rank.
  ASSERT_EQ(reduce_all(dir.path()).error, "");
  note.clear();
  EXPECT_EQ(report(dir.path(), &note).find("stale"), std::string::npos);
  EXPECT_NE(note.find("4 of 4 rank(s)"), std::string::npos) << note;
}

TEST(NodeMerge, RanksWithCaptureWindowsStayWithTheirTraces) {
  tt::TempDir dir;
  write_job(dir.path(), true);
  const ReduceResult reduced = reduce_all(dir.path());
  ASSERT_EQ(reduced.error, "");
  ASSERT_EQ(reduced.nodes.size(), 2u);
  EXPECT_EQ(reduced.nodes[0].path, "");
  EXPECT_EQ(reduced.nodes[0].left_to_traces.size(), 2u);
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_NE(e.path().extension(), ".node") << e.path();
}

TEST(NodeMerge, AHostNotInTheDirectoryIsNamedWithThoseThatAre) {
  tt::TempDir dir;
  write_job(dir.path());
  ReduceOptions options;
  options.host = "node-z";
  const ReduceResult r = reduce_directory(dir.path(), options);
  EXPECT_NE(r.error.find("no rank trace of host 'node-z'"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("node-a (2 ranks), node-b (2 ranks)"), std::string::npos) << r.error;
  options.host = "node-b";
  const ReduceResult b = reduce_directory(dir.path(), options);
  ASSERT_EQ(b.error, "");
  ASSERT_EQ(b.nodes.size(), 1u);
  EXPECT_EQ(b.nodes[0].ranks, 2u);
}

TEST(NodeMerge, APlantedSymlinkIsNotFollowed) {
  tt::TempDir dir, elsewhere;
  write_job(elsewhere.path());
  ASSERT_EQ(reduce_all(elsewhere.path()).error, "");
  write_job(dir.path());
  const std::string traces = report(dir.path());
  const std::string link = dir.path() + "/ncclwatch.node-a.job.node";
  ASSERT_EQ(symlink((elsewhere.path() + "/ncclwatch.node-a.job.node").c_str(), link.c_str()), 0);
  std::string note;
  const std::string merged = report(dir.path(), &note);
  EXPECT_EQ(note, "");
  EXPECT_NE(merged.find("skipped: a symbolic link (not followed)"), std::string::npos) << merged;
}

// `ncclwatch run` reduces its node's ranks only when the job is not all on its node: another
// host's traces beside them, or a world larger than its ranks (a directory per node); never for
// a host with no rank there; and it counts the node's ranks still running.
TEST(NodeReduce, AHostInAJobSeesOtherHostsAndItsRunningRanks) {
  const auto spans = [](const std::string& dir, const std::string& job, const std::string& host) {
    return host_in_job(dir, job, host).spans_hosts;
  };
  tt::TempDir shared;
  write_job(shared.path());
  EXPECT_TRUE(spans(shared.path(), "job", "node-a"));
  EXPECT_TRUE(spans(shared.path(), "", "node-b"));
  EXPECT_FALSE(spans(shared.path(), "job", "node-c"));
  EXPECT_FALSE(spans(shared.path(), "other-job", "node-a"));
  EXPECT_EQ(host_in_job(shared.path(), "job", "node-a").ranks, 2u);
  EXPECT_EQ(host_in_job(shared.path(), "job", "node-a").running, 0u);

  tt::TempDir own;  // node-a's directory alone: its two ranks of a world of 4, one still running
  tt::write_rank(own.path(), "job", "node-a", 100, 0, 4, rank_records(0, false));
  tt::write_trace(
      own.path() + "/ncclwatch.node-a.101.trace",
      tt::make_header(tt::make_process("job", "node-a", 101, 1, 4), format::kTraceStateOpen, 0),
      rank_records(1, false));
  EXPECT_TRUE(spans(own.path(), "job", "node-a"));
  EXPECT_EQ(host_in_job(own.path(), "job", "node-a").running, 1u);

  tt::TempDir alone;  // the whole world on one host, or a world no launcher told
  for (int r = 0; r < 2; ++r) {
    tt::write_rank(alone.path(), "job", "node-a", 100 + r, r, 2, rank_records(r, false));
    tt::write_rank(alone.path(), "unknown", "node-a", 200 + r, r, -1, rank_records(r, false));
  }
  EXPECT_FALSE(spans(alone.path(), "job", "node-a"));
  EXPECT_FALSE(spans(alone.path(), "unknown", "node-a"));
}

}  // namespace
}  // namespace ncclwatch::reduce

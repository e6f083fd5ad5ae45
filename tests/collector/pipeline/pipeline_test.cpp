#include "pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kineto/kineto_loader.h"
#include "pipeline/collector_parts.h"
#include "report/text_renderer.h"
#include "synthetic_job.h"
#include "trace_files.h"

namespace ncclwatch::pipeline {
namespace {

using format::Func;
using testing::JobBuilder;
constexpr uint64_t kComm = 0x00000000deadbeef;
const std::vector<int> kEight = {0, 1, 2, 3, 4, 5, 6, 7};

PipelineOptions quiet() {
  PipelineOptions o;
  o.analyses = false;  // these tests check the collector's own part of the report
  return o;
}

bool has_finding(const model::Report& r, model::Severity s, const std::string& text) {
  for (const auto& f : r.findings) {
    if (f.severity == s && f.text.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(Pipeline, HangSignatureIsTheFirstCriticalLine) {
  JobBuilder b(8);
  b.comm(kComm, kEight);
  b.all_reduces(kComm, kEight, 0, 4812, 0, 1000);
  for (int r : kEight) {
    if (r != 5) b.call(r, kComm, 4812, Func::kAllReduce, 1024, 6'000'000, 0);
  }
  PipelineResult res = run_pipeline(b.job, quiet());
  EXPECT_TRUE(has_finding(res.report, model::Severity::kCritical,
                          "rank 5 never entered all_reduce #4812 on comm 0x00000000deadbeef; ranks "
                          "0-4,6-7 waited there"))
      << report::render_text(res.report);
  const auto& inc = res.report.json["incomplete"];
  ASSERT_EQ(inc.size(), 1u);
  EXPECT_EQ(inc[0]["comm"], "0x00000000deadbeef");
  EXPECT_EQ(inc[0]["seq"], 4812);
  EXPECT_EQ(inc[0]["op"], "all_reduce");
  EXPECT_EQ(inc[0]["missing_ranks"], nlohmann::json::array({5}));
  std::string text = report::render_text(res.report);
  // The hang verdict opens the report; the collector's own line follows it.
  EXPECT_EQ(text.rfind("CRITICAL [hang] job hung in all_reduce #4812 on comm 0x00000000deadbeef "
                       "(4.0 KiB): ranks 0-4,6-7 entered it; rank 5 never entered it",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("\nCRITICAL [collector] rank 5 never entered"), std::string::npos) << text;
  const auto& hang = res.report.json["hang"];
  EXPECT_EQ(hang["seq"], 4812);
  EXPECT_EQ(hang["missing_ranks"], nlohmann::json::array({5}));
  EXPECT_EQ(hang["waiting_ranks"], nlohmann::json::array({0, 1, 2, 3, 4, 6, 7}));
  EXPECT_EQ(hang["evidence"], "last_incomplete");
}

TEST(Pipeline, DroppedRecordsAreNamedNextToTheMissingRank) {
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  b.all_reduces(kComm, {0, 1, 2, 3}, 0, 5, 0, 1000);
  b.all_reduces(kComm, {0, 1, 3}, 5, 5, 10'000, 1000);
  b.all_reduces(kComm, {0, 1, 2, 3}, 10, 5, 20'000, 1000);
  b.job.ranks[2].info.losses.ring_full = 42;
  PipelineResult res = run_pipeline(b.job, quiet());
  EXPECT_TRUE(has_finding(
      res.report, model::Severity::kWarning,
      "rank 2 left no record of all_reduce #5-#9 (5 instances) on comm 0x00000000deadbeef"))
      << report::render_text(res.report);
  EXPECT_TRUE(has_finding(res.report, model::Severity::kWarning, "it dropped 42 records"));
  EXPECT_TRUE(has_finding(res.report, model::Severity::kWarning,
                          "42 records dropped on 1 of 4 ranks (ring full 42 records)"));
}

// A full ring is one story told once: the warning's figures are the rank table's `dropped` and
// `lost` columns (it said "2,992 lost (ring full 2,992 records)" next to a table reading
// "dropped 1497, lost 0", and a second warning repeated the drop).
TEST(Pipeline, ARingFullIsOneWarningWithTheTablesFigures) {
  JobBuilder b(2);
  b.comm(kComm, {0, 1});
  b.all_reduces(kComm, {0, 1}, 0, 5, 0, 1000);
  b.job.ranks[0].info.losses.ring_full = 1497;
  b.job.ranks[1].info.losses.ring_full = 1495;
  b.job.ranks[1].info.losses.counts.names_lost = 7;
  PipelineResult res = run_pipeline(b.job, quiet());
  int mentions = 0;
  for (const auto& f : res.report.findings) {
    if (f.text.find("ring full") != std::string::npos ||
        f.text.find("dropped") != std::string::npos)
      ++mentions;
  }
  EXPECT_EQ(mentions, 1) << report::render_text(res.report);
  const std::string text = report::render_text(res.report);
  EXPECT_EQ(text.find("WARNING  [collector] 2,992 records dropped and 7 lost on 2 of 2 ranks "
                      "(ring full 2,992 records; string table full 7 names) — figures below "
                      "undercount; raise NCCLWATCH_RING_MB"),
            0u)
      << text;
  const std::string& table = res.report.sections[0].body;
  EXPECT_NE(table.find("1497      0"), std::string::npos) << table;
  EXPECT_NE(table.find("1495      7"), std::string::npos) << table;
}

// Every kind of loss is said in the first line of the report, in the rank table's `lost`
// column, in the section "Losses" and in the JSON, each under its own name.
TEST(Pipeline, EveryKindOfLossIsInTheFirstLinesTableAndJson) {
  const auto kinds = model::Losses{}.entries();
  for (std::size_t kind = 0; kind < kinds.size(); ++kind) {
    SCOPED_TRACE(kinds[kind].key);
    JobBuilder b(4);
    b.comm(kComm, {0, 1, 2, 3});
    b.all_reduces(kComm, {0, 1, 2, 3}, 0, 5, 0, 1000);
    model::Losses& l = b.job.ranks[1].info.losses;
    // Set one kind through the same table the report reads (entries() order = field order).
    if (kind == 0)
      l.ring_full = 1234;
    else if (kind == 1)
      l.cupti_dropped = 1234;
    else
      l.counts.*format::kLossFields[kind - 2].counter = 1234;
    PipelineResult res = run_pipeline(b.job, quiet());
    const std::string text = report::render_text(res.report);
    const std::string first = text.substr(0, text.find('\n'));
    EXPECT_NE(first.find(kind < 2 ? "1,234 records dropped on 1 of 4 ranks"
                                  : "1,234 lost on 1 of 4 ranks"),
              std::string::npos)
        << text;
    EXPECT_NE(first.find(std::string(kinds[kind].label) + " 1,234 " + kinds[kind].unit),
              std::string::npos)
        << first;
    EXPECT_NE(first.find("undercount"), std::string::npos) << first;
    // Rank table: `dropped` holds ring full + CUPTI dropped, `lost` the other kinds.
    const std::string& table = res.report.sections[0].body;
    EXPECT_NE(table.find("dropped   lost"), std::string::npos) << table;
    EXPECT_NE(table.find(kind < 2 ? "1234      0" : "   0   1234"), std::string::npos) << table;
    ASSERT_GE(res.report.sections.size(), 2u);
    EXPECT_EQ(res.report.sections[1].title, "Losses");
    EXPECT_NE(res.report.sections[1].body.find(kinds[kind].key), std::string::npos);
    EXPECT_NE(res.report.sections[1].body.find("1,234"), std::string::npos);
    const auto& j = res.report.json;
    EXPECT_EQ(j["ranks"][1]["losses"][kinds[kind].key], 1234);
    EXPECT_EQ(j["ranks"][0]["losses"][kinds[kind].key], 0);
    EXPECT_EQ(j["losses"]["total"][kinds[kind].key], 1234);
    EXPECT_EQ(j["losses"]["ranks"], nlohmann::json::array({1}));
    EXPECT_EQ(j["losses"]["undercount"], true);
  }
}

// A loss too small to move any figure is said (info, section "Losses", JSON) but does not warn:
// a real one-rank GPU run lost one NVTX range of 23,836 records and its report opened with a
// warning above the job's real finding. One in a thousand records on any rank warns again.
TEST(Pipeline, ALossTooSmallToMoveAFigureIsInfoNotAWarning) {
  for (const uint64_t records : {23'836u, 900u}) {
    SCOPED_TRACE(records);
    JobBuilder b(2);
    b.comm(kComm, {0, 1});
    b.all_reduces(kComm, {0, 1}, 0, 5, 0, 1000);
    for (auto& r : b.job.ranks) r.info.records = records;
    b.job.ranks[0].info.losses.counts.cupti_unknown = 1;
    PipelineResult res = run_pipeline(b.job, quiet());
    const bool material = records < 1000;
    EXPECT_TRUE(has_finding(res.report,
                            material ? model::Severity::kWarning : model::Severity::kInfo,
                            "1 lost on 1 of 2 ranks (unknown CUPTI activity 1 records)"))
        << report::render_text(res.report);
    const std::string text = report::render_text(res.report);
    EXPECT_EQ(text.find("undercount") != std::string::npos, material) << text;
    EXPECT_EQ(res.report.json["losses"]["undercount"], true);
    bool section = false;
    for (const auto& sec : res.report.sections) section |= sec.title == "Losses";
    EXPECT_TRUE(section);
  }
}

TEST(Pipeline, NoLossNoLine) {
  JobBuilder b(2);
  b.comm(kComm, {0, 1});
  b.all_reduces(kComm, {0, 1}, 0, 5, 0, 1000);
  PipelineResult res = run_pipeline(b.job, quiet());
  EXPECT_EQ(report::render_text(res.report).find("lost on"), std::string::npos);
  EXPECT_EQ(report::render_text(res.report).find("dropped on"), std::string::npos);
  EXPECT_EQ(res.report.json["losses"]["undercount"], false);
  EXPECT_EQ(res.report.json["losses"]["total"]["ring_full"], 0);
  for (const auto& s : res.report.sections) EXPECT_NE(s.title, "Losses");
}

TEST(Pipeline, DesyncAndSizeDisagreement) {
  JobBuilder b(4);
  b.comm(kComm, {0, 1, 2, 3});
  b.job.ranks[3].comms[0].nranks = 5;
  for (int r = 0; r < 4; ++r) b.call(r, kComm, 0, Func::kAllReduce, r == 1 ? 10 : 20, 0, 100);
  PipelineResult res = run_pipeline(b.job, quiet());
  EXPECT_TRUE(
      has_finding(res.report, model::Severity::kCritical,
                  "desync on comm 0x00000000deadbeef #0: rank 1 issued count 10 vs 20 (majority)"));
  EXPECT_TRUE(has_finding(
      res.report, model::Severity::kCritical,
      "members of comm 0x00000000deadbeef disagree on its size: ranks 0-2 says 4, rank 3 says 5"));
  const auto& d = res.report.json["desync"];
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0]["ranks"], nlohmann::json::array({1}));
  EXPECT_EQ(d[0]["what"], "count 10 vs 20 (majority)");
  EXPECT_EQ(res.report.json["comms"][0]["size_disagreement"], true);
}

TEST(Pipeline, CleanJobSaysSoAndFillsEveryKey) {
  JobBuilder b(4, 2);
  b.comm(kComm, {0, 1, 2, 3});
  b.all_reduces(kComm, {0, 1, 2, 3}, 0, 50, 0, 100'000);
  b.shift_clock(1, 5000);
  b.shift_clock(3, 5000);
  b.job.problems.push_back({"/x/rank9.trace", "bad magic"});
  PipelineResult res = run_pipeline(b.job, quiet());
  EXPECT_TRUE(
      has_finding(res.report, model::Severity::kInfo, "all 50 instances matched on every rank"));
  const auto& j = res.report.json;
  EXPECT_EQ(j["schema_version"], 1);
  for (const char* key :
       {"ranks", "comms", "incomplete", "desync", "clock", "overlap", "stragglers", "problems"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["topology"]["findings"].is_array());
  ASSERT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["ranks"][1]["host"], "node1");
  EXPECT_EQ(j["ranks"][1]["calls"], 50);
  EXPECT_EQ(j["ranks"][1]["pid"], 1001);
  EXPECT_EQ(j["comms"][0]["id"], "0x00000000deadbeef");
  EXPECT_EQ(j["comms"][0]["ranks"], nlohmann::json::array({0, 1, 2, 3}));
  ASSERT_EQ(j["clock"]["offsets"].size(), 2u);
  EXPECT_NEAR(j["clock"]["offsets"][1]["offset_us"].get<double>(), -5.0, 0.01);
  EXPECT_EQ(j["problems"][0]["message"], "bad magic");
  std::string text = report::render_text(res.report);
  EXPECT_NE(text.find("== Ranks"), std::string::npos);
  EXPECT_NE(text.find("== Input problems\n/x/rank9.trace: bad magic"), std::string::npos);
  EXPECT_LT(text.find("== Ranks"), text.find("== Input problems"));
}

TEST(Pipeline, ManyRanksTableIsSummarised) {
  JobBuilder b(300);
  b.job.ranks[150].info.losses.ring_full = 3;
  PipelineResult res = run_pipeline(b.job, quiet());
  const std::string& body = res.report.sections[0].body;
  EXPECT_NE(body.find("300 ranks in all (9 shown"), std::string::npos) << body;
  EXPECT_EQ(res.report.json["ranks"].size(), 300u);
}

// Headings only above something: ranks that never made a communicator (they died in init, or the
// job used another backend) get no empty "Communicators" table.
TEST(Pipeline, NoHeadingOrTableWithNothingUnderIt) {
  JobBuilder b(2);
  PipelineResult res = run_pipeline(b.job);
  const std::string text = report::render_text(res.report);
  EXPECT_EQ(text.find("== Communicators"), std::string::npos) << text;
  EXPECT_EQ(text.find("nranks  ranks"), std::string::npos) << text;  // its column names
  for (std::size_t at = text.find("\n== "); at != std::string::npos;
       at = text.find("\n== ", at + 1)) {
    const std::size_t body = text.find('\n', at + 1) + 1;
    EXPECT_TRUE(body < text.size() && text[body] != '\n' && text.compare(body, 3, "== ") != 0)
        << "empty heading at " << at << " of\n"
        << text;
  }
}

TEST(Pipeline, ProgressReportsStages) {
  JobBuilder b(2);
  std::vector<std::string> stages;
  PipelineOptions o = quiet();
  o.progress = [&](const char* s) { stages.push_back(s); };
  run_pipeline(b.job, o);
  EXPECT_NE(std::find(stages.begin(), stages.end(), "matching"), stages.end());
}

// One collective of a Kineto trace of PyTorch without `Seq` and process-group arguments: a
// record_param_comms op and its NCCL kernel, `at_us` into the trace.
void kineto_op(std::vector<std::string>& ev, int id, const char* name, const char* kernel,
               int64_t nelems, int64_t at_us) {
  const int64_t ts = 1'000'000'000'000'000 + at_us;
  ev.push_back(fmt::format(
      R"J({{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": {}, "dur": 5, "args": {{"External id": {}, "Collective name": "{}", "dtype": "Float", "In msg nelems": {}, "Out msg nelems": {}, "Group size": 2}}}})J",
      ts, id, name, nelems, nelems));
  ev.push_back(fmt::format(
      R"J({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 1, "tid": 20, "ts": {}, "dur": 40, "args": {{"device": 0, "stream": 20, "correlation": {}, "External id": {}}}}})J",
      kernel, ts + 10, 1000 + id, id));
  ev.push_back(fmt::format(
      R"J({{"ph": "X", "cat": "kernel", "name": "void gemm()", "pid": 1, "tid": 7, "ts": {}, "dur": 30, "args": {{"device": 0, "stream": 7, "correlation": {}, "External id": {}}}}})J",
      ts + 60, 2000 + id, 500 + id));
}

TEST(Pipeline, KinetoWithoutSeqOrProcessGroupsMatchesOpsOfOneKindOnly) {
  // Two ranks of a profiler window (HTA's "sampled" traces look like this): rank 0 recorded an
  // all-to-all between two all-reduces that rank 1's window left out. Matched by order of
  // appearance over all ops, rank 1's second all-reduce met rank 0's all-to-all: a CRITICAL
  // desync that never happened. Matched per kind (and count), the all-reduces pair up.
  const char* kAr = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  const char* kA2a = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
  kineto::testing::TempDir tmp;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> ev;
    kineto_op(ev, 1, "allreduce", kAr, 1000, 0);
    if (rank == 0) kineto_op(ev, 2, "all_to_all", kA2a, 4000, 200);
    kineto_op(ev, 3, "allreduce", kAr, 1000, 400);
    kineto_op(ev, 4, "allreduce", kAr, 1000, 600);
    kineto::testing::write_file(
        tmp.path("rank" + std::to_string(rank) + ".json"),
        kineto::testing::trace_doc(
            ev, fmt::format(R"({{"backend": "nccl", "rank": {}, "world_size": 2}})", rank)));
  }
  model::JobTrace job = kineto::load_job({tmp.dir().string()});
  ASSERT_EQ(job.ranks.size(), 2u);
  PipelineResult res = run_pipeline(job, quiet());
  const std::string text = report::render_text(res.report);
  EXPECT_TRUE(res.match.desyncs.empty()) << text;
  for (const auto& f : res.report.findings) {
    EXPECT_LT(f.severity, model::Severity::kWarning) << text;
    EXPECT_EQ(f.text.find("desync on comm"), std::string::npos) << text;
  }
  // The three all-reduces matched across both ranks.
  std::size_t all_reduces = 0;
  for (const auto& inst : res.match.instances)
    all_reduces += inst.func == Func::kAllReduce && inst.nmembers == 2;
  EXPECT_EQ(all_reduces, 3u) << text;
}

TEST(Pipeline, AClockEstimateThatIsNotSignificantIsNoResidualSkew) {
  JobBuilder b(2);
  model::JobTrace& job = b.job;
  job.ranks[1].info.host = "node-b";
  model::MatchResult match;
  model::ClockAlignment clock;
  clock.hosts.resize(2);
  clock.hosts[0] = {"node-a", 0, 0, 0, "reference", true};
  clock.hosts[1] = {"node-b", 0, 56'826'600, 8, "gpu-kernel-end (not significant: wall clock kept)",
                    false};
  model::Report report;
  add_collector_findings(job, match, clock, report);
  const std::string text = report::render_text(report);
  EXPECT_EQ(text.find("residual skew"), std::string::npos) << text;
  EXPECT_NE(text.find("node-b kept on the wall clock"), std::string::npos) << text;
}

}  // namespace
}  // namespace ncclwatch::pipeline

// Bad input gives one clear line and no crash: not JSON, not a trace, no GPU events, truncated
// or corrupt gzip, truncated JSON, malformed events, missing files, and random damage.
#include <gtest/gtest.h>

#include <random>

#include "kineto/kineto_loader.h"
#include "synthetic_trace.h"
#include "trace_files.h"

namespace ncclwatch::kineto {
namespace {

using testing::TempDir;
using testing::write_file;

struct Outcome {
  std::optional<model::RankTrace> trace;
  std::vector<model::InputProblem> problems;
};

Outcome load_bytes(const std::string& bytes, const std::string& name = "t.json") {
  TempDir tmp;
  write_file(tmp.path(name), bytes);
  Outcome o;
  o.trace = load_rank(tmp.path(name), o.problems);
  for (const auto& p : o.problems) EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
  return o;
}

std::string small_trace() {
  testing::SyntheticTraceSpec spec;
  spec.steps = 4;
  return testing::synthetic_trace(spec);
}

TEST(KinetoBadInput, NotJson) {
  Outcome o = load_bytes("this is a log file, not JSON\n");
  EXPECT_FALSE(o.trace.has_value());
  ASSERT_EQ(o.problems.size(), 1u);
  EXPECT_EQ(o.problems[0].message, "not JSON (starts with neither '{' nor '[')");
}

TEST(KinetoBadInput, JsonButNotATrace) {
  Outcome o =
      load_bytes(R"({"schemaVersion": 1, "deviceProperties": [], "events": [{"ph": "X"}]})");
  EXPECT_FALSE(o.trace.has_value());
  ASSERT_EQ(o.problems.size(), 1u);
  EXPECT_EQ(o.problems[0].message, "not a Chrome trace (no \"traceEvents\" array)");
}

TEST(KinetoBadInput, NoGpuEvents) {
  Outcome o = load_bytes(testing::trace_doc(
      {R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 5, "dur": 1})",
       R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "args": {"correlation": 3}})"}));
  EXPECT_FALSE(o.trace.has_value());
  ASSERT_EQ(o.problems.size(), 1u);
  EXPECT_EQ(o.problems[0].message,
            "no GPU events (no kernel, gpu_memcpy or gpu_memset); is it a GPU trace?");
  Outcome empty_events = load_bytes(R"({"traceEvents": []})");
  EXPECT_FALSE(empty_events.trace.has_value());
  ASSERT_EQ(empty_events.problems.size(), 1u);
}

TEST(KinetoBadInput, TruncatedGzipKeepsTheEventsBeforeTheCut) {
  const std::string doc = small_trace();
  const std::string gz = testing::gzip(doc);
  Outcome whole = load_bytes(gz, "t.json.gz");
  ASSERT_TRUE(whole.trace.has_value());
  Outcome cut = load_bytes(gz.substr(0, gz.size() / 2), "t.json.gz");
  ASSERT_EQ(cut.problems.size(), 1u);
  const std::string& m = cut.problems[0].message;
  EXPECT_EQ(m.rfind("truncated gzip (the compressed stream ends early) after ", 0), 0u) << m;
  ASSERT_TRUE(cut.trace.has_value());
  EXPECT_FALSE(cut.trace->info.complete);
  EXPECT_GT(cut.trace->kernels.size(), 0u);
  EXPECT_LT(cut.trace->kernels.size(), whole.trace->kernels.size());
  // Cut inside the gzip header, and right after it: nothing usable, still one line.
  for (std::size_t n : {5u, 12u, 30u}) {
    Outcome tiny = load_bytes(gz.substr(0, n), "t.json.gz");
    EXPECT_FALSE(tiny.trace.has_value()) << n;
    ASSERT_EQ(tiny.problems.size(), 1u) << n;
    EXPECT_NE(tiny.problems[0].message.find("truncated gzip"), std::string::npos)
        << tiny.problems[0].message;
  }
}

TEST(KinetoBadInput, CorruptGzip) {
  std::string gz = testing::gzip(small_trace());
  for (std::size_t i = gz.size() / 3; i < gz.size() / 3 + 64; ++i)
    gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  Outcome o = load_bytes(gz, "t.json.gz");
  ASSERT_GE(o.problems.size(), 1u);
  EXPECT_NE(o.problems[0].message.find("corrupt gzip data"), std::string::npos)
      << o.problems[0].message;
}

TEST(KinetoBadInput, TruncatedJson) {
  const std::string doc = small_trace();
  Outcome o = load_bytes(doc.substr(0, doc.size() * 2 / 3));
  ASSERT_TRUE(o.trace.has_value());
  EXPECT_FALSE(o.trace->info.complete);
  ASSERT_EQ(o.problems.size(), 1u);
  EXPECT_EQ(o.problems[0].message.rfind("truncated JSON after ", 0), 0u) << o.problems[0].message;
}

TEST(KinetoBadInput, MalformedEventsAreSkippedAndCounted) {
  Outcome o = load_bytes(testing::trace_doc(
      {R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"stream": 7}})",
       R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1 2})", R"({"ph": "X", "ts": ,})"}));
  ASSERT_TRUE(o.trace.has_value());
  EXPECT_EQ(o.trace->kernels.size(), 1u);
  EXPECT_EQ(o.trace->info.skipped, 2u);
  ASSERT_EQ(o.problems.size(), 1u);
  EXPECT_EQ(o.problems[0].message.rfind("2 malformed events skipped (first: event #2: ", 0), 0u)
      << o.problems[0].message;
}

TEST(KinetoBadInput, MissingFileEmptyFileEmptyDirectory) {
  std::vector<model::InputProblem> problems;
  EXPECT_FALSE(load_rank("/nonexistent/ncclwatch/rank0.json", problems).has_value());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, "cannot open: No such file or directory");
  Outcome empty = load_bytes("");
  EXPECT_FALSE(empty.trace.has_value());
  ASSERT_EQ(empty.problems.size(), 1u);
  EXPECT_EQ(empty.problems[0].message, "empty file");
  TempDir tmp;
  model::JobTrace job = load_job({tmp.dir().string()});
  EXPECT_TRUE(job.ranks.empty());
  ASSERT_EQ(job.problems.size(), 1u);
  EXPECT_EQ(job.problems[0].message, "no .json or .json.gz files in this directory");
}

// Random damage (flipped bytes, cuts, inserted quotes and brackets) never crashes and always
// ends in either a trace or at least one problem line.
TEST(KinetoBadInput, RandomDamageNeverCrashes) {
  const std::string doc = small_trace();
  std::mt19937 rng(1234);
  for (int round = 0; round < 150; ++round) {
    std::string d = doc;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % d.size();
      switch (rng() % 4) {
        case 0:
          d[at] = static_cast<char>(rng());
          break;
        case 1:
          d.resize(at);
          break;
        case 2:
          d.insert(at, 1, "\"{}[]\\,:"[rng() % 8]);
          break;
        default:
          d.erase(at, rng() % 200);
          break;
      }
      if (d.empty()) d = "{";
    }
    const bool zip = round % 3 == 0;
    Outcome o = load_bytes(zip ? testing::gzip(d) : d, zip ? "t.json.gz" : "t.json");
    EXPECT_TRUE(o.trace.has_value() || !o.problems.empty()) << round;
  }
}

}  // namespace
}  // namespace ncclwatch::kineto

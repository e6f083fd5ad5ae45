// A node file's rank (reduce/rank_codec.h) is the digested rank, field for field: the analyses
// give the same report from decoded ranks on every job of the verdict matrix; and bytes that are
// not a whole rank are refused, never read past.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "analysis/analyze.h"
#include "analysis/rank_digest.h"
#include "reduce/byte_codec.h"
#include "reduce/call_codec.h"
#include "reduce/rank_codec.h"
#include "report_verdicts.h"
#include "scenario_matrix.h"

namespace ncclwatch::reduce {
namespace {

using analysis::testing::Kind;
using analysis::testing::Noise;

model::JobTrace digested(const model::JobTrace& job) {
  model::JobTrace out = job;
  for (model::RankTrace& r : out.ranks) analysis::digest_and_drop(r, nullptr);
  return out;
}

// Every rank through the codec (problems and identity too), as a node file carries it.
model::JobTrace through_codec(const model::JobTrace& job, std::size_t& bytes,
                              int64_t compute_resolution_ns = 1) {
  model::JobTrace out = job;
  for (model::RankTrace& r : out.ranks) {
    NodeRank node;
    node.rank = r;
    node.compute_resolution_ns = compute_resolution_ns;
    node.trace = {{"ncclwatch.h.1.trace", "ncclwatch.h.1.1.trace"}, 1, -5, 7, 123};
    node.problems = {{"/d/ncclwatch.h.1.trace", "truncated"}, {"elsewhere", "x"}};
    const std::string encoded = encode_rank(node, "/d");
    bytes += encoded.size();
    NodeRank back;
    std::string error;
    EXPECT_TRUE(decode_rank(encoded, "/d", back, error)) << error;
    EXPECT_EQ(back.trace, node.trace);
    EXPECT_EQ(back.problems.size(), 2u);
    if (back.problems.size() == 2) {
      EXPECT_EQ(back.problems[0].source, "/d/ncclwatch.h.1.trace");
      EXPECT_EQ(back.problems[1].source, "elsewhere");
    }
    EXPECT_EQ(back.rank.info.source, r.info.source);
    EXPECT_EQ(back.rank.calls.size(), r.calls.size());
    EXPECT_EQ(back.compute_resolution_ns, r.digest ? compute_resolution_ns : 1);
    r = std::move(back.rank);
  }
  return out;
}

TEST(RankCodec, DecodedRanksGiveTheSameReportOnTheVerdictMatrix) {
  int jobs = 0;
  for (Kind kind : analysis::testing::kAllKinds) {
    for (Noise noise : {Noise::kNone, Noise::kJitter, Noise::kGc, Noise::kContention}) {
      for (bool host_only : {false, true}) {
        const analysis::testing::SimJob sim =
            analysis::testing::matrix_job(kind, noise, host_only, 3);
        const model::JobTrace lean = digested(sim.job);
        std::size_t bytes = 0;
        const model::JobTrace decoded = through_codec(lean, bytes);
        model::Report a, b;
        analysis::analyze(lean, sim.match, sim.clocks, a);
        analysis::analyze(decoded, sim.match, sim.clocks, b, 2);
        EXPECT_EQ(analysis::testing::everything(a), analysis::testing::everything(b))
            << analysis::testing::to_string(kind) << " " << analysis::testing::to_string(noise)
            << (host_only ? " host-only" : " GPU");
        EXPECT_GT(bytes, 0u);
        ++jobs;
      }
    }
  }
  EXPECT_EQ(jobs, 64);
}

// The report's verdicts (report_verdicts.h) with its findings, which analyze() keeps apart.
std::string verdicts(const model::Report& r) {
  std::vector<std::pair<int, std::string>> findings;
  for (const model::Finding& f : r.findings)
    findings.emplace_back(static_cast<int>(f.severity), f.source);
  std::sort(findings.begin(), findings.end());
  return test_support::verdicts_of(r.json) + nlohmann::json(findings).dump();
}

// Compute spans on a 1 µs grid (reduce --compute-resolution-ns 1000) move the report's GPU-time
// figures by at most about that much a kernel, never a verdict, on every job of the matrix; each
// rank's compute time stays within half a microsecond a span edge.
TEST(RankCodec, ComputeTimesOnAGridKeepEveryVerdictOfTheMatrix) {
  constexpr int64_t kGrid = 1000;
  int jobs = 0, moved = 0;
  for (Kind kind : analysis::testing::kAllKinds) {
    for (Noise noise : {Noise::kNone, Noise::kJitter, Noise::kGc, Noise::kContention}) {
      const analysis::testing::SimJob sim = analysis::testing::matrix_job(kind, noise, false, 3);
      const model::JobTrace lean = digested(sim.job);
      std::size_t exact_bytes = 0, grid_bytes = 0;
      through_codec(lean, exact_bytes);
      const model::JobTrace decoded = through_codec(lean, grid_bytes, kGrid);
      EXPECT_LT(grid_bytes, exact_bytes);
      for (std::size_t i = 0; i < lean.ranks.size(); ++i) {
        const analysis::IntervalSet a = lean.ranks[i].digest->activity.compute.unpack();
        const analysis::IntervalSet b = decoded.ranks[i].digest->activity.compute.unpack();
        EXPECT_LE(std::abs(a.length() - b.length()), static_cast<int64_t>(a.size()) * kGrid);
        for (const analysis::Interval& span : b.spans()) {
          EXPECT_EQ(span.begin % kGrid, 0);
          EXPECT_EQ(span.end % kGrid, 0);
        }
      }
      model::Report a, b;
      analysis::analyze(lean, sim.match, sim.clocks, a);
      analysis::analyze(decoded, sim.match, sim.clocks, b, 2);
      EXPECT_EQ(verdicts(a), verdicts(b))
          << analysis::testing::to_string(kind) << " " << analysis::testing::to_string(noise);
      moved += analysis::testing::everything(a) != analysis::testing::everything(b);
      ++jobs;
    }
  }
  EXPECT_EQ(jobs, 32);
  EXPECT_GT(moved, 0) << "the grid changed no figure: the test does not test it";
}

// Times already on the grid come back exactly; a span shorter than half a step is gone, spans
// whose gap closes are one, and times before 0 round the same way as after.
TEST(RankCodec, SpansOnAGridRoundToTheNearestPoint) {
  NodeRank node;
  auto digest = std::make_shared<analysis::RankDigest>();
  analysis::RankActivity activity;
  activity.compute = analysis::IntervalSet::from_sorted(
      {{-2600, -1400}, {0, 3000}, {5000, 5400}, {7000, 7600}, {8400, 9000}, {12000, 14000}});
  digest->activity = analysis::PackedActivity::pack(activity);
  node.rank.digest = digest;
  node.compute_resolution_ns = 1000;
  NodeRank back;
  std::string error;
  ASSERT_TRUE(decode_rank(encode_rank(node, ""), "", back, error)) << error;
  ASSERT_TRUE(back.rank.digest);
  EXPECT_EQ(back.compute_resolution_ns, 1000);
  const analysis::IntervalSet got = back.rank.digest->activity.compute.unpack();
  const std::vector<analysis::Interval> want = {
      {-3000, -1000}, {0, 3000}, {7000, 9000}, {12000, 14000}};
  ASSERT_EQ(got.spans().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got.spans()[i].begin, want[i].begin) << i;
    EXPECT_EQ(got.spans()[i].end, want[i].end) << i;
  }
}

TEST(RankCodec, EveryFieldOfACallSurvives) {
  NodeRank node;
  model::CallEvent c;
  c.enter_ns = 1'000'000'123;
  c.exit_ns = 1'000'050'000;
  c.comm_id = 0xfedcba9876543210ULL;
  c.seq = 1ULL << 40;
  c.count = 123456789;
  c.stream = 0xdeadbeef;
  c.peer = -1;
  c.group_id = 77;
  c.kernel = -1;
  c.func = format::Func::kReduceScatter;
  c.datatype = 9;
  c.redop = 3;
  c.result = -2;
  c.flags = model::kCallNeverReturned;
  c.gpu_start_ns = 1'000'010'000;
  c.gpu_end_ns = 1'000'090'000;
  model::CallEvent d = c;
  d.enter_ns = c.enter_ns;  // an equal time: calls of one instant
  d.seq = 3;                // a step back on the same comm (another comm's seq interleaved)
  d.gpu_start_ns = d.gpu_end_ns = 0;
  // Streams and kernel indices are written against those before: a new stream, the first one
  // again, kernel indices up, down and none.
  model::CallEvent e = d, f = c;
  e.enter_ns = f.enter_ns = c.enter_ns + 1;
  e.stream = 7;
  e.kernel = 400'000;
  f.kernel = 12;
  node.rank.calls = {c, d, e, f};
  NodeRank back;
  std::string error;
  ASSERT_TRUE(decode_rank(encode_rank(node, ""), "", back, error)) << error;
  ASSERT_EQ(back.rank.calls.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    const model::CallEvent& x = node.rank.calls[i];
    const model::CallEvent& y = back.rank.calls[i];
    EXPECT_EQ(x.enter_ns, y.enter_ns);
    EXPECT_EQ(x.exit_ns, y.exit_ns);
    EXPECT_EQ(x.comm_id, y.comm_id);
    EXPECT_EQ(x.seq, y.seq);
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.stream, y.stream);
    EXPECT_EQ(x.peer, y.peer);
    EXPECT_EQ(x.group_id, y.group_id);
    EXPECT_EQ(x.kernel, y.kernel);
    EXPECT_EQ(x.func, y.func);
    EXPECT_EQ(x.datatype, y.datatype);
    EXPECT_EQ(x.redop, y.redop);
    EXPECT_EQ(x.result, y.result);
    EXPECT_EQ(x.flags, y.flags);
    EXPECT_EQ(x.gpu_start_ns, y.gpu_start_ns);
    EXPECT_EQ(x.gpu_end_ns, y.gpu_end_ns);
  }
}

// Group ids and kernel indices are steps from the last one there was: none in between, a step
// back, and a first group far from 0.
TEST(RankCodec, GroupsAndKernelsAroundNoneSurvive) {
  NodeRank node;
  const std::vector<std::pair<uint32_t, int32_t>> ids = {
      {UINT32_MAX, 5}, {0, -1}, {3, 2}, {3, INT32_MAX}, {0, -1}, {1, 0}, {UINT32_MAX, 0}};
  int64_t t = 100;
  for (const auto& [group, kernel] : ids) {
    model::CallEvent c;
    c.enter_ns = c.exit_ns = t += 10;
    c.group_id = group;
    c.kernel = kernel;
    node.rank.calls.push_back(c);
  }
  NodeRank back;
  std::string error;
  ASSERT_TRUE(decode_rank(encode_rank(node, ""), "", back, error)) << error;
  ASSERT_EQ(back.rank.calls.size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(back.rank.calls[i].group_id, ids[i].first) << i;
    EXPECT_EQ(back.rank.calls[i].kernel, ids[i].second) << i;
  }
}

// A step's calls repeat in every step but for their times: each is written once, then named
// by its index. Calls that never repeat (a new count each) past the most shapes remembered are
// still written whole, field for field.
TEST(RankCodec, RepeatedCallsAreWrittenAsTheirShape) {
  auto job = [](std::size_t calls, bool repeat) {
    NodeRank node;
    for (std::size_t i = 0; i < calls; ++i) {
      model::CallEvent c;
      c.enter_ns = static_cast<int64_t>(i) * 1'000'003;
      c.exit_ns = c.enter_ns + 20'000 + static_cast<int64_t>(i % 7);
      c.comm_id = 0x1234567890abcdefULL + i % 2;
      c.seq = i / 2;
      c.count = repeat ? 1000 * (i % 8 / 2 + 1) : i;
      c.stream = 42;
      c.kernel = static_cast<int32_t>(i * 41);
      c.func = format::Func::kAllReduce;
      c.gpu_start_ns = c.enter_ns + 30'000;
      c.gpu_end_ns = c.gpu_start_ns + 900'000 + static_cast<int64_t>(i % 13);
      node.rank.calls.push_back(c);
    }
    return node;
  };
  auto round_trip = [](const NodeRank& node) {
    const std::string bytes = encode_rank(node, "");
    NodeRank back;
    std::string error;
    EXPECT_TRUE(decode_rank(bytes, "", back, error)) << error;
    EXPECT_EQ(back.rank.calls.size(), node.rank.calls.size());
    for (std::size_t i = 0; i < node.rank.calls.size() && i < back.rank.calls.size(); ++i) {
      const model::CallEvent &x = node.rank.calls[i], &y = back.rank.calls[i];
      if (std::memcmp(&x, &y, sizeof x) != 0) {
        ADD_FAILURE() << "call " << i << " differs";
        break;
      }
    }
    return bytes.size();
  };
  const std::size_t repeated = round_trip(job(10'000, true));
  // Four times of 3-4 bytes each here, and one byte for the shape.
  EXPECT_LT(repeated, 10'000u * 15) << "a repeated call takes its times and an index";
  const std::size_t whole = round_trip(job(kMaxCallShapes + 1000, false));
  EXPECT_GT(whole, (kMaxCallShapes + 1000) * 20) << "every call a new shape";
}

TEST(RankCodec, EveryFieldOfAStepSummarySurvives) {
  NodeRank node;
  format::StepRecord a{};
  a.prefix = {format::RecordKind::kStep, 0x81, 2, 3, 4321};
  a.step = 1'000'000;
  a.calls = 17;
  a.start_ns = 5'000'000'000;
  a.arrive_ns = a.start_ns + 30'000'000;
  a.sync_ns = a.start_ns - 1;  // on the host clock: any order
  a.duration_us = 100'000;
  a.compute_us = UINT32_MAX;  // not measured
  a.exposed_us = 0;
  a.idle_us = 7;
  a.bytes = 1ULL << 40;
  format::StepRecord b = a;
  b.step = 3;  // numbers start again (learned steps after seconds of the clock)
  b.start_ns = a.start_ns + 100'000'000;
  b.arrive_ns = 0;  // none
  b.sync_ns = 0;
  node.rank.steps = {a, b};
  NodeRank back;
  std::string error;
  ASSERT_TRUE(decode_rank(encode_rank(node, ""), "", back, error)) << error;
  ASSERT_EQ(back.rank.steps.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(std::memcmp(&back.rank.steps[i], &node.rank.steps[i], sizeof(format::StepRecord)), 0)
        << i;
}

// A time difference that would carry a time past 64 bits is damage: refused, not wrapped (the
// UBSan build runs this too).
// The least bytes a step summary or a window takes (all fields 0) are what the reader counts on
// before allocating: a thousand of each are read, not refused as more than the bytes can hold
// (found by tests/fuzz/reduce: the reader counted 15 and 11).
TEST(RankCodec, TheSmallestStepsAndWindowsAreRead) {
  for (bool steps : {true, false}) {
    NodeRank node;
    if (steps) node.rank.steps.assign(1000, format::StepRecord{});
    if (!steps) node.rank.windows.assign(1000, model::WindowMark{});
    NodeRank back;
    std::string error;
    ASSERT_TRUE(decode_rank(encode_rank(node, ""), "", back, error)) << steps << " " << error;
    EXPECT_EQ(back.rank.steps.size(), steps ? 1000u : 0u);
    EXPECT_EQ(back.rank.windows.size(), steps ? 0u : 1000u);
  }
}

TEST(RankCodec, ATimePastSixtyFourBitsIsRefused) {
  NodeRank node;
  model::CallEvent c;
  c.enter_ns = INT64_MAX - 10;
  c.exit_ns = INT64_MAX;
  node.rank.calls = {c};
  NodeRank back;
  std::string error;
  ASSERT_TRUE(decode_rank(encode_rank(node, ""), "", back, error)) << error;
  EXPECT_EQ(back.rank.calls[0].exit_ns, INT64_MAX);
  ByteWriter w;
  w.svarint(INT64_MAX);
  w.svarint(1);
  ByteReader r(w.bytes());
  EXPECT_EQ(r.svarint_after(0), INT64_MAX);
  EXPECT_EQ(r.svarint_after(INT64_MAX), 0);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error().find("past the range"), std::string::npos) << r.error();
}

TEST(RankCodec, CallsOutOfOrderAreRefused) {
  NodeRank node;
  model::CallEvent a, b;
  a.enter_ns = 10;
  b.enter_ns = 5;
  node.rank.calls = {a, b};
  NodeRank back;
  std::string error;
  EXPECT_FALSE(decode_rank(encode_rank(node, ""), "", back, error));
  EXPECT_NE(error.find("out of order"), std::string::npos) << error;
}

TEST(RankCodec, ANameThatIsAPathIsRefused) {
  NodeRank node;
  node.trace.parts = {"../../etc/passwd"};
  NodeRank back;
  std::string error;
  EXPECT_FALSE(decode_rank(encode_rank(node, ""), "", back, error));
}

// Every cut and many flipped bytes of a real rank: refused or read, never past the bytes (the
// ASan build runs this too), never a count that allocates beyond them.
TEST(RankCodec, DamagedBytesAreRefusedOrReadWithinBounds) {
  const analysis::testing::SimJob sim =
      analysis::testing::matrix_job(Kind::kSlowGpu, Noise::kJitter, false, 5);
  NodeRank node;
  node.rank = digested(sim.job).ranks[1];
  node.trace.parts = {"ncclwatch.h.2.trace"};
  const std::string bytes = encode_rank(node, "");
  NodeRank back;
  std::string error;
  ASSERT_TRUE(decode_rank(bytes, "", back, error)) << error;
  int refused = 0;
  for (std::size_t cut = 0; cut < bytes.size(); cut += 1 + cut / 64) {
    refused += !decode_rank(std::string_view(bytes).substr(0, cut), "", back, error);
  }
  EXPECT_GT(refused, 0);
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::string damaged = bytes;
    for (int k = 0; k < 4; ++k) damaged[rng() % damaged.size()] = static_cast<char>(rng() & 0xff);
    decode_rank(damaged, "", back, error);  // either way: no crash, no runaway allocation
  }
}

TEST(ByteCodec, NumbersRoundTripAndACountBeyondTheBytesIsRefused) {
  ByteWriter w;
  for (int64_t v : {INT64_MIN, int64_t{-1}, int64_t{0}, int64_t{1}, INT64_MAX}) w.svarint(v);
  w.varint(UINT64_MAX);
  w.f64(-0.1);
  w.varint(1'000'000);  // a count with nothing after it
  ByteReader r(w.bytes());
  for (int64_t v : {INT64_MIN, int64_t{-1}, int64_t{0}, int64_t{1}, INT64_MAX})
    EXPECT_EQ(r.svarint(), v);
  EXPECT_EQ(r.varint(), UINT64_MAX);
  EXPECT_EQ(r.f64(), -0.1);
  EXPECT_EQ(r.count(1), 0u);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cannot hold"), std::string::npos);
}

// Byte planes: every width from none (all 0) to 8, a column whose one outlier widens it, and a
// forged width or a count the bytes cannot hold refused before anything is allocated.
TEST(ByteCodec, PlanesRoundTripAtEveryWidthAndForgedOnesAreRefused) {
  std::vector<std::vector<uint64_t>> columns = {{}, {0, 0, 0}, {1, 255, 7}, {256, 65535, 3}};
  for (int width = 3; width <= 8; ++width) {
    const uint64_t top = width == 8 ? UINT64_MAX : (uint64_t{1} << (8 * width)) - 1;
    columns.push_back({top, 1, top / 3, 0});
  }
  columns.push_back(std::vector<uint64_t>(1000, 2000));
  columns.back()[500] = uint64_t{3600} * 1'000'000'000;  // an hour-long call among microseconds
  ByteWriter w;
  for (const auto& c : columns) w.planes(c);
  EXPECT_EQ(w.bytes()[0], 0);  // the empty column: its width only
  ByteReader r(w.bytes());
  for (const auto& c : columns) {
    std::vector<uint64_t> back;
    ASSERT_TRUE(r.planes(c.size(), back)) << r.error();
    EXPECT_EQ(back, c);
  }
  EXPECT_TRUE(r.done());

  std::string forged(1, static_cast<char>(9));
  ByteReader wide(forged);
  std::vector<uint64_t> out;
  EXPECT_FALSE(wide.planes(1, out));
  EXPECT_NE(wide.error().find("wider than 8"), std::string::npos) << wide.error();
  forged = std::string(1, static_cast<char>(8)) + std::string(15, '\x01');
  ByteReader short_column(forged);
  EXPECT_FALSE(short_column.planes(2, out));  // 16 bytes needed, 15 there
  EXPECT_NE(short_column.error().find("cannot hold"), std::string::npos) << short_column.error();
  ByteReader huge(forged);
  EXPECT_FALSE(huge.planes(SIZE_MAX / 4, out));
  EXPECT_TRUE(out.empty());
  // A column that must take a byte a number (ByteReader::count bounds calls by it) refuses none.
  ByteWriter zeros;
  zeros.planes({0, 0, 0}, 1);
  zeros.planes({0, 0, 0});
  EXPECT_EQ(zeros.bytes().size(), 1u + 3u + 1u);
  const std::string second = zeros.bytes().substr(4);  // the reader views it: it must outlive it
  ByteReader narrow(second);
  EXPECT_FALSE(narrow.planes(3, out, 1));
  EXPECT_NE(narrow.error().find("narrower"), std::string::npos) << narrow.error();
}

}  // namespace
}  // namespace ncclwatch::reduce

// Random mutations of a valid trace never crash the reader: each either fails with a message or
// yields records that pass validation. Seeded, so a failure reproduces.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <initializer_list>

#include <random>

#include "trace/rank_loader.h"
#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

using namespace testing;  // NOLINT: the fixture's builders

std::vector<Record> valid_records() {
  std::vector<Record> rs;
  rs.push_back(make_identity(1, 4, 1, 1, "0000:3d:00.0"));
  rs.push_back(make_comm(0x55, 4, 1, 10));
  for (auto& s : make_string(2, std::string(130, 'n'))) rs.push_back(s);
  for (int i = 0; i < 24; ++i) {
    rs.push_back(
        make_call(Func::kAllReduce, 0x55, static_cast<uint32_t>(i), 100 * i + 20, 100 * i + 30));
    rs.push_back(make_kernel(100 * i + 40, 100 * i + 60, i, 2, true));
    rs.push_back(make_link(100 * i + 25, 0x55, static_cast<uint32_t>(i), i));
  }
  rs.push_back(make_nvtx(0, 3000, 2));
  rs.push_back(make_clock(5, 10, 3));
  rs.push_back(make_sched(9, 3100, 5000, 600));
  for (uint32_t s = 0; s < 6; ++s)
    rs.push_back(make_step(s, 400 * s + 20, 1, 4 * s, 400 * s + 20, 400 * s + 60, 0, 0, 1));
  rs.push_back(
      make_window(format::WindowEvent::kOpen, 9, format::WindowTrigger::kSchedule, 20, 0, 0, 6, 2));
  rs.push_back(make_window(format::WindowEvent::kClose, 9, format::WindowTrigger::kSchedule, 20,
                           2400, 0, 6, 2));
  return rs;
}

TEST(Mutations, NeverCrashAndOnlyValidValuesComeOut) {
  TempDir dir;
  const auto rs = valid_records();
  const std::string good = dir.file("good.trace");
  write_rank(dir.path(), "job", "h", 1, 1, 4, rs);
  std::rename((dir.path() + "/ncclwatch.h.1.trace").c_str(), good.c_str());
  const std::vector<char> original = read_bytes(good);
  std::mt19937_64 rng(20261202);
  const std::string path = dir.file("mutant.trace");
  for (int round = 0; round < 3000; ++round) {
    std::vector<char> bytes = original;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0:  // flip a byte anywhere (header included)
          bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
          break;
        case 1:  // random 8-byte word inside the records
          if (bytes.size() > 328) {
            const std::size_t at = 320 + rng() % (bytes.size() - 328);
            const uint64_t v = rng();
            std::memcpy(&bytes[at], &v, sizeof v);
          }
          break;
        case 2:  // truncate
          bytes.resize(rng() % (bytes.size() + 1));
          break;
        default:  // append garbage
          for (int i = static_cast<int>(rng() % 100); i > 0; --i)
            bytes.push_back(static_cast<char>(rng()));
          break;
      }
      if (bytes.empty()) break;
    }
    write_bytes(path, bytes);
    std::vector<model::InputProblem> problems;
    const model::RankTrace t = load_rank(path, problems, true);
    SCOPED_TRACE("round " + std::to_string(round));
    if (t.info.records == 0) {
      ASSERT_FALSE(problems.empty());
      continue;
    }
    ASSERT_LE(t.calls.size() + t.kernels.size(), t.info.records);
    for (const auto& st : t.steps) {
      ASSERT_GE(st.start_ns, 0);
      for (uint32_t figure : {st.compute_us, st.exposed_us, st.idle_us})
        ASSERT_TRUE(figure == format::kStepUnknownUs || figure <= st.duration_us);
    }
    for (const auto& w : t.windows) ASSERT_TRUE(!w.closed || w.end_ns >= w.start_ns);
    for (const auto& c : t.calls) {
      ASSERT_LE(c.enter_ns, c.exit_ns);
      ASSERT_TRUE(format::is_collective(c.func) || format::is_p2p(c.func));
    }
    for (const auto& k : t.kernels) {
      ASSERT_LE(k.start_ns, k.end_ns);
      ASSERT_LT(k.name, t.names.size());
    }
    for (const auto& r : t.ranges) ASSERT_LT(r.name, t.names.size());
    for (const auto& s : t.sched) {
      ASSERT_NE(s.tid, 0u);
      ASSERT_GE(s.t_ns, 0);
    }
    for (const auto& c : t.comms) {
      ASSERT_GT(c.nranks, 0);
      ASSERT_LT(c.rank, c.nranks);
    }
    for (const auto& p : problems) ASSERT_FALSE(p.message.empty());
  }
}

}  // namespace
}  // namespace ncclwatch::trace

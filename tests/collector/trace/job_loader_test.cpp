// load_job: many ranks in parallel, and every kind of bad directory content.
#include "trace/job_loader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "ncclwatch/names.h"
#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

using namespace testing;  // NOLINT: the fixture's builders

std::vector<Record> calls_for(int n) {
  std::vector<Record> rs;
  for (int i = 0; i < n; ++i) {
    rs.push_back(
        make_call(Func::kAllReduce, 0x77, static_cast<uint32_t>(i), 100 * i, 100 * i + 50));
  }
  return rs;
}

std::string lines(const model::JobTrace& job) {
  std::string out;
  for (const auto& p : job.problems) out += p.source + ": " + p.message + "\n";
  return out;
}

bool has_line(const model::JobTrace& job, const std::string& part) {
  return lines(job).find(part) != std::string::npos;
}

TEST(LoadJob, LoadsEveryRankSortedByRank) {
  TempDir dir;
  for (int r = 15; r >= 0; --r)
    write_rank(dir.path(), "job", "node" + std::to_string(r / 8), 1000 + r, r, 16,
               calls_for(r + 1));
  JobLoadOptions options;
  options.threads = 3;
  const auto job = load_job(dir.path(), options);
  EXPECT_TRUE(job.problems.empty()) << lines(job);
  EXPECT_EQ(job.job, "job");
  ASSERT_EQ(job.ranks.size(), 16u);
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(job.ranks[r].info.rank, r);
    EXPECT_EQ(job.ranks[r].calls.size(), static_cast<std::size_t>(r + 1));
  }
}

TEST(LoadJob, DuplicateRanksAreKeptAndNamed) {
  TempDir dir;
  write_rank(dir.path(), "job", "a", 1, 0, 4, calls_for(2));
  const auto first = write_rank(dir.path(), "job", "a", 2, 3, 4, calls_for(2));
  const auto second = write_rank(dir.path(), "job", "b", 3, 3, 4, calls_for(2));
  write_rank(dir.path(), "job", "b", 4, 1, 4, calls_for(2));
  write_rank(dir.path(), "job", "b", 5, 2, 4, calls_for(2));
  const auto job = load_job(dir.path());
  ASSERT_EQ(job.ranks.size(), 5u);
  EXPECT_EQ(job.ranks[3].info.rank, 3);
  EXPECT_EQ(job.ranks[4].info.rank, 3);
  EXPECT_TRUE(has_line(job, "rank 3 claimed by 2 files (all kept): " + first + ", " + second))
      << lines(job);
  EXPECT_EQ(job.problems.size(), 1u) << lines(job);
}

// A second copy of a rank's file (copied in twice, a backup next to it, a half-copied one)
// is the same process, not a second rank: the most complete copy is kept, each other one is
// one line, and no rank is counted twice.
TEST(LoadJob, CopiesOfOneProcesssTraceAreLoadedOnce) {
  TempDir dir;
  for (int r = 0; r < 4; ++r) write_rank(dir.path(), "job", "h", 10 + r, r, 4, calls_for(6));
  const std::string original = dir.file("ncclwatch.h.11.trace");
  const auto bytes = read_bytes(original);
  write_bytes(dir.file("backup-of-rank1.trace"), bytes);
  // A partial copy (cut mid-way) sorts before the original and must not win.
  write_trace(dir.file("a-partial.trace"),
              make_header(make_process("job", "h", 11, 1, 4), format::kTraceStateOpen, 0),
              calls_for(3));
  // Same pid, another start: a different process (pid reused), so not a copy.
  auto other = make_process("job", "h", 13, 3, 4);
  other.start_monotonic_ns += 1;
  write_trace(dir.file("reused-pid.trace"), make_header(other, format::kTraceStateClosed, 6),
              calls_for(6));

  const auto job = load_job(dir.path());
  ASSERT_EQ(job.ranks.size(), 5u) << lines(job);
  EXPECT_EQ(job.ranks[1].info.source, original);
  EXPECT_EQ(job.ranks[1].calls.size(), 6u);
  EXPECT_TRUE(has_line(job, dir.file("a-partial.trace") + ": skipped: a copy of " + original))
      << lines(job);
  EXPECT_TRUE(has_line(job, dir.file("backup-of-rank1.trace") + ": skipped: a copy of " + original))
      << lines(job);
  EXPECT_TRUE(has_line(job, "rank 3 claimed by 2 files")) << lines(job);
  EXPECT_EQ(job.problems.size(), 3u) << lines(job);
}

// NCCLWATCH_MAX_MB writes a process's trace in parts (ncclwatch.<host>.<pid>.<n>.trace, each a
// whole trace file naming its part): they load as one rank, records in part order, counts from
// the last part (the whole run's); a missing part is one line and the rest still loads.
TEST(LoadJob, PartsOfOneProcessLoadAsOneRank) {
  TempDir dir;
  const auto process = [](uint32_t part) {
    format::ProcessInfo p = make_process("job", "h", 77, 1, 2);
    p.part = part;
    return p;
  };
  const std::vector<Record> all = calls_for(9);
  for (uint32_t part = 0; part < 3; ++part) {
    const std::vector<Record> mine(all.begin() + 3 * part, all.begin() + 3 * part + 3);
    auto header = make_header(process(part), format::kTraceStateClosed, mine.size());
    if (part == 0) header.losses.detail_evicted = 40;  // what its rewrite removed
    if (part == 2) {
      header.dropped = 5;
      header.losses.detail_evicted = 40;  // the whole run's counts
    }
    write_trace(dir.file(format::trace_file_name("h", 77, part)), header, mine);
  }
  write_rank(dir.path(), "job", "h", 78, 0, 2, calls_for(9));
  auto job = load_job(dir.path());
  EXPECT_TRUE(job.problems.empty()) << lines(job);
  ASSERT_EQ(job.ranks.size(), 2u);
  const auto& r = job.ranks[1];
  EXPECT_EQ(r.info.rank, 1);
  EXPECT_TRUE(r.info.complete);
  ASSERT_EQ(r.calls.size(), 9u);
  for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(r.calls[i].seq, i);
  EXPECT_EQ(r.info.losses.ring_full, 5u);
  EXPECT_EQ(r.info.losses.counts.detail_evicted, 40u);
  const JobIndex index = index_job(dir.path());
  ASSERT_EQ(index.files.size(), 2u);
  std::size_t with_parts = 0;
  for (const auto& f : index.files) with_parts += f.parts.size() == 3;
  EXPECT_EQ(with_parts, 1u);

  std::filesystem::remove(dir.file(format::trace_file_name("h", 77, 1)));
  job = load_job(dir.path());
  EXPECT_TRUE(has_line(job, "part(s) 1-1 of this process's trace are missing")) << lines(job);
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[1].calls.size(), 6u);
}

TEST(LoadJob, TwoJobsPicksTheBiggerAndSaysHowToSelectTheOther) {
  TempDir dir;
  for (int r = 0; r < 3; ++r) write_rank(dir.path(), "big", "h", 10 + r, r, 3, calls_for(1));
  for (int r = 0; r < 2; ++r) write_rank(dir.path(), "small", "h", 20 + r, r, 2, calls_for(1));
  auto job = load_job(dir.path());
  EXPECT_EQ(job.job, "big");
  EXPECT_EQ(job.ranks.size(), 3u);
  EXPECT_TRUE(
      has_line(job,
               "directory holds 2 jobs; loaded 'big' (3 files, the one with the most ranks); "
               "also here: 'small' (2 files) -- select one with --job ID"))
      << lines(job);

  JobLoadOptions options;
  options.job = "small";
  job = load_job(dir.path(), options);
  EXPECT_EQ(job.job, "small");
  EXPECT_EQ(job.ranks.size(), 2u);
  // Asked for by id: what was wanted, nothing to warn about (it said "select one with --job"
  // to the user who had just done so, and a clean job's report exited 3).
  EXPECT_TRUE(job.problems.empty()) << lines(job);

  options.job = "nope";
  job = load_job(dir.path(), options);
  EXPECT_TRUE(job.ranks.empty());
  EXPECT_TRUE(
      has_line(job, "no trace file of job 'nope' (jobs here: 'big' (3 files), 'small' (2 files))"))
      << lines(job);
}

TEST(LoadJob, RankWithNoRecordsAndMissingRanks) {
  TempDir dir;
  write_rank(dir.path(), "job", "h", 1, 0, 4, calls_for(3));
  const auto empty = write_rank(dir.path(), "job", "h", 2, 1, 4, {});
  const auto job = load_job(dir.path());
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_TRUE(has_line(job, empty + ": no records")) << lines(job);
  EXPECT_TRUE(has_line(job, "world size 4, no trace file for rank(s) 2-3")) << lines(job);
}

TEST(LoadJob, ForeignAndBrokenFilesAreSkippedWithALine) {
  TempDir dir;
  write_rank(dir.path(), "job", "h", 1, 0, 2, calls_for(3));
  const auto torn = dir.file("ncclwatch.h.2.trace");
  write_trace(torn, make_header(make_process("job", "h", 2, 1, 2), format::kTraceStateOpen, 0),
              calls_for(4), 10);
  write_bytes(dir.file("report.json"), std::vector<char>(400, '{'));   // a companion: ignored
  write_bytes(dir.file("stolen.trace"), std::vector<char>(400, '{'));  // claims to be a trace
  auto header = make_header(make_process("job", "h", 3, 1, 2), format::kTraceStateClosed, 0);
  header.layout_version = 7;
  write_trace(dir.file("ncclwatch.h.3.trace"), header, {});
  std::filesystem::create_directory(dir.file("subdir"));
  const auto job = load_job(dir.path());
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[1].calls.size(), 4u);
  EXPECT_FALSE(job.ranks[1].info.complete);
  EXPECT_TRUE(has_line(
      job, dir.file("stolen.trace") +
               ": skipped (foreign file): not an ncclwatch trace (bad magic 0x7b7b7b7b7b7b7b7b)"))
      << lines(job);
  EXPECT_TRUE(has_line(job, "ncclwatch.h.3.trace: unreadable: layout version 7")) << lines(job);
  EXPECT_TRUE(has_line(job, torn + ": truncated: last record torn (10 of 64 bytes)")) << lines(job);
  EXPECT_FALSE(has_line(job, "report.json")) << lines(job);
  EXPECT_EQ(job.problems.size(), 4u) << lines(job);  // + "not closed" of the torn one
}

// A shared trace dir may hold names others planted: a FIFO would block a reader forever, a
// symlink may point anywhere (a device, another user's file). Neither is opened.
TEST(LoadJob, SymlinksAndFifosAreNeverOpened) {
  TempDir dir, elsewhere;
  write_rank(dir.path(), "job", "h", 1, 0, 2, calls_for(3));
  const auto real = write_rank(elsewhere.path(), "job", "h", 2, 1, 2, calls_for(3));
  ASSERT_EQ(::symlink(real.c_str(), dir.file("ncclwatch.h.2.trace").c_str()), 0);
  ASSERT_EQ(::mkfifo(dir.file("ncclwatch.h.3.trace").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(dir.file("nccl-debug.h.4.log").c_str(), 0600), 0);  // not a trace: silent
  ASSERT_EQ(::symlink("/dev/zero", dir.file("nccl-topo.h.xml").c_str()), 0);
  const auto job = load_job(dir.path());
  ASSERT_EQ(job.ranks.size(), 1u) << lines(job);
  EXPECT_TRUE(has_line(job, "ncclwatch.h.2.trace: skipped: a symbolic link (not followed)"))
      << lines(job);
  EXPECT_TRUE(has_line(job, "ncclwatch.h.3.trace: skipped: not a regular file")) << lines(job);
  EXPECT_TRUE(has_line(job, "world size 2, no trace file for rank(s) 1")) << lines(job);
  EXPECT_EQ(job.problems.size(), 3u) << lines(job);
}

TEST(LoadJob, MissingOrEmptyDirectory) {
  TempDir dir;
  auto job = load_job(dir.file("nope"));
  EXPECT_TRUE(job.ranks.empty());
  EXPECT_TRUE(has_line(job, "cannot read directory")) << lines(job);
  job = load_job(dir.path());
  EXPECT_TRUE(has_line(job, "no ncclwatch trace files")) << lines(job);
}

TEST(LoadJob, IndexListsFilesWithoutLoading) {
  TempDir dir;
  write_rank(dir.path(), "job", "h", 1, 0, 2, calls_for(3));
  write_rank(dir.path(), "job", "h", 2, 1, 2, calls_for(5));
  const auto index = index_job(dir.path());
  EXPECT_EQ(index.job, "job");
  ASSERT_EQ(index.files.size(), 2u);
  EXPECT_EQ(index.files[0].records + index.files[1].records, 8u);
  EXPECT_EQ(index.files[0].job, "job");
}

TEST(LoadJob, ProgressIsReportedForSlowMerges) {
  TempDir dir;
  for (int r = 0; r < 64; ++r) write_rank(dir.path(), "job", "h", 100 + r, r, 64, calls_for(2000));
  JobLoadOptions options;
  options.threads = 1;
  options.progress_after = std::chrono::milliseconds(0);  // report from the first tick on
  options.progress_every = std::chrono::milliseconds(1);
  std::size_t calls = 0;
  JobLoadProgress last;
  options.progress = [&](const JobLoadProgress& p) {
    ++calls;
    last = p;
  };
  const auto job = load_job(dir.path(), options);
  EXPECT_EQ(job.ranks.size(), 64u);
  // Whether a tick falls inside the load depends on speed; what a tick says does not.
  if (calls != 0) {
    EXPECT_EQ(last.files_total, 64u);
    EXPECT_LE(last.files_done, 64u);
    EXPECT_EQ(last.records_total, 64u * 2000u);
  }
}

}  // namespace
}  // namespace ncclwatch::trace

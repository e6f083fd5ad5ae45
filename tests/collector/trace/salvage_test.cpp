// Segments and salvage: joining what the trace file holds with what the ring still holds.
#include "trace/salvage.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <numeric>

#include "ncclwatch/seqlock_copy.h"
#include "trace/rank_loader.h"
#include "trace/segment_view.h"
#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

using namespace testing;  // NOLINT: the fixture's builders

Record call(uint32_t seq) {
  return make_call(Func::kAllReduce, 0x99, seq, 1000 + 100 * int64_t{seq},
                   1050 + 100 * int64_t{seq});
}

// A pid that is certainly dead: a child that exited and was reaped.
int64_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

std::vector<uint64_t> seqs_in(const std::string& path) {
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(path, problems);
  std::vector<uint64_t> out;
  for (const auto& c : t.calls) out.push_back(c.seq);
  return out;
}

// The file a segment of (host, pid) is salvaged into: always derived from its identity.
std::string trace_name(const std::string& host, int64_t pid) {
  return "ncclwatch." + host + "." + std::to_string(pid) + ".trace";
}

bool segment_exists(const std::string& name) {
  return std::filesystem::exists(std::string(kShmDirectory) + "/" + name);
}

TEST(Salvage, JoinsFileAndRingWithoutDuplicatesOrGapsAndCountsHoles) {
  TempDir dir;
  const std::string job = unique_job("join");
  const int64_t pid = dead_pid();
  const std::string path = dir.file(trace_name("h", pid));
  // The drain thread wrote positions [0, 5) and died while writing the 6th (torn).
  std::vector<Record> on_disk;
  for (uint32_t i = 0; i < 5; ++i) on_disk.push_back(call(i));
  auto header = make_header(make_process(job, "h", pid, -1, -1), format::kTraceStateOpen, 0);
  write_trace(path, header, on_disk, 30);

  TestSegment seg(job, "h", pid, 8, path);
  // The ring: positions 3..11 were committed (3, 4 already on disk, 3 overwritten by 11),
  // position 9 was claimed but never published (a hole).
  for (uint32_t pos = 3; pos < 12; ++pos) seg.put(pos, call(pos), pos != 9);
  seg.set_positions(5, 12);
  seg.header().process.rank = 2;
  seg.header().process.world_size = 4;
  seg.header().dropped = 17;
  seg.header().losses.ring_holes = 2;  // skipped by the owner before it died
  seg.header().losses.names_lost = 5;

  const SalvageResult r = salvage_segment(seg.name(), {});
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_FALSE(segment_exists(seg.name()));
  EXPECT_EQ(r.trace_path, path);
  EXPECT_EQ(r.in_file, 5u);
  EXPECT_EQ(r.appended, 6u);  // 5, 6, 7, 8, 10, 11
  EXPECT_EQ(r.holes, 1u);
  EXPECT_EQ(r.overwritten, 0u);
  EXPECT_EQ(r.dropped, 17u);
  EXPECT_EQ(seqs_in(path), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11}));
  EXPECT_NE(describe(r).find("5 in file + 6 recovered, 1 hole(s), 0 overwritten, 17 dropped"),
            std::string::npos)
      << describe(r);

  std::vector<model::InputProblem> problems;
  const auto t = load_rank(path, problems);
  EXPECT_TRUE(problems.empty()) << problems[0].message;
  EXPECT_TRUE(t.info.salvaged);
  EXPECT_TRUE(t.info.complete);
  EXPECT_EQ(t.info.rank, 2);  // learned from the segment
  EXPECT_EQ(t.info.losses.ring_full, 17u);
  // The owner's counts, plus what this salvage skipped: the report says the trace undercounts.
  EXPECT_EQ(t.info.losses.counts.ring_holes, 2u + 1u);
  EXPECT_EQ(t.info.losses.counts.names_lost, 5u);
  EXPECT_EQ(t.info.losses.counts.ring_overwritten, 0u);
}

// With capture windows the drain leaves detail out of the file (docs/always-on.md), so the file
// holds fewer records than the ring positions it processed: the drain checkpoint says where the
// two join. Positions 0..9 processed, the file kept 0, 2, 4, 6, 8 (5 records), then the drain
// wrote the batch 10..11 to the file and died before committing it: the file is cut back to the
// checkpoint's 5 and the ring gives 10..13 once.
TEST(Salvage, JoinsAFilteredFileAtTheDrainCheckpoint) {
  TempDir dir;
  const std::string job = unique_job("checkpoint");
  const int64_t pid = dead_pid();
  const std::string path = dir.file(trace_name("h", pid));
  std::vector<Record> on_disk;
  for (uint32_t i : {0, 2, 4, 6, 8, 10, 11}) on_disk.push_back(call(i));
  write_trace(path, make_header(make_process(job, "h", pid, -1, -1), format::kTraceStateOpen, 0),
              on_disk);
  TestSegment seg(job, "h", pid, 8, path);
  for (uint32_t pos = 8; pos < 14; ++pos) seg.put(pos, call(pos));
  seg.set_positions(10, 14);
  format::DrainCheckpoint cp{};
  cp.pos = 10;
  cp.file_records = 5;
  format::seqlock_store(seg.header().drain, cp);

  const SalvageResult r = salvage_segment(seg.name(), {});
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_EQ(r.in_file, 5u);
  EXPECT_EQ(r.appended, 4u);
  EXPECT_EQ(r.overwritten, 0u);
  EXPECT_EQ(seqs_in(path), (std::vector<uint64_t>{0, 2, 4, 6, 8, 10, 11, 12, 13}));
}

// The drain committed the batch after its checkpoint (read_pos moved on) and died before writing
// the next checkpoint: the file is whole, the ring joins at read_pos.
TEST(Salvage, JoinsAFilteredFileAfterACommitTheCheckpointMissed) {
  TempDir dir;
  const std::string job = unique_job("committed");
  const int64_t pid = dead_pid();
  const std::string path = dir.file(trace_name("h", pid));
  std::vector<Record> on_disk;
  for (uint32_t i : {0, 4, 8, 10, 11}) on_disk.push_back(call(i));
  write_trace(path, make_header(make_process(job, "h", pid, -1, -1), format::kTraceStateOpen, 0),
              on_disk);
  TestSegment seg(job, "h", pid, 8, path);
  for (uint32_t pos = 8; pos < 14; ++pos) seg.put(pos, call(pos));
  seg.set_positions(12, 14);
  format::DrainCheckpoint cp{};
  cp.pos = 10;
  cp.file_records = 3;
  format::seqlock_store(seg.header().drain, cp);

  const SalvageResult r = salvage_segment(seg.name(), {});
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_EQ(r.in_file, 5u);
  EXPECT_EQ(r.appended, 2u);
  EXPECT_EQ(seqs_in(path), (std::vector<uint64_t>{0, 4, 8, 10, 11, 12, 13}));
}

TEST(Salvage, CreatesTheTraceFileAndCountsOverwrittenPositions) {
  TempDir dir;
  const std::string job = unique_job("create");
  const int64_t pid = dead_pid();
  const std::string path = dir.file(trace_name("h", pid));
  TestSegment seg(job, "h", pid, 4, path);
  for (uint32_t pos = 0; pos < 10; ++pos) seg.put(pos, call(pos));  // 0..5 overwritten by 4..9
  seg.set_positions(6, 10);
  const SalvageResult r = salvage_segment(seg.name(), {});
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_EQ(r.in_file, 0u);
  EXPECT_EQ(r.overwritten, 6u);
  EXPECT_EQ(r.appended, 4u);
  EXPECT_EQ(seqs_in(path), (std::vector<uint64_t>{6, 7, 8, 9}));
  std::vector<model::InputProblem> problems;
  const auto t = load_rank(path, problems);
  EXPECT_EQ(t.info.job, job);
  EXPECT_EQ(t.info.pid, pid);
  EXPECT_EQ(t.info.losses.counts.ring_overwritten, 6u);
  EXPECT_EQ(t.info.losses.counts.ring_holes, 0u);
}

TEST(Salvage, RefusesALiveOwnerUnlessForced) {
  TempDir dir;
  const std::string job = unique_job("live");
  const std::string path = dir.file(trace_name("h", ::getpid()));
  TestSegment seg(job, "h", ::getpid(), 8, path);  // this test process is alive
  seg.put(0, call(0));
  SalvageResult r = salvage_segment(seg.name(), {});
  EXPECT_EQ(r.status, SalvageStatus::kSkippedLive);
  EXPECT_NE(describe(r).find("owner pid " + std::to_string(::getpid()) + " is alive"),
            std::string::npos);
  EXPECT_TRUE(segment_exists(seg.name()));
  EXPECT_FALSE(std::filesystem::exists(path));

  SalvageOptions force;
  force.force = true;
  r = salvage_segment(seg.name(), force);
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_EQ(seqs_in(path), (std::vector<uint64_t>{0}));
}

TEST(Salvage, ClosedSegmentOfALiveOwnerIsFair) {
  TempDir dir;
  const std::string job = unique_job("closed");
  TestSegment seg(job, "h", ::getpid(), 8, dir.file(trace_name("h", ::getpid())));
  seg.put(0, call(0));
  seg.header().state = format::kSegmentStateClosed;
  const SalvageResult r = salvage_segment(seg.name(), {});
  EXPECT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
}

// Makes `path` unwritable even for root (the immutable attribute) while it lives; for other
// users a read-only mode does it. ok() false when neither is possible here.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(std::string path) : path_(std::move(path)) {
    std::filesystem::permissions(path_, std::filesystem::perms::owner_read);
    if (::geteuid() != 0) {
      ok_ = true;
      return;
    }
    immutable_ = set_immutable(true);
    ok_ = immutable_;
  }
  ~ReadOnlyFile() {
    if (immutable_) set_immutable(false);
  }
  bool ok() const { return ok_; }

 private:
  bool set_immutable(bool on) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    int flags = 0;
    bool done = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (done) {
      flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
      done = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    ::close(fd);
    return done;
  }
  std::string path_;
  bool ok_ = false;
  bool immutable_ = false;
};

TEST(Salvage, UnwritableTracePathFallsBackToDirKeepingTheFileRecords) {
  TempDir dir, ro, out;
  const std::string job = unique_job("ro");
  const int64_t pid = dead_pid();
  const std::string path = ro.file(trace_name("h", pid));
  write_trace(path, make_header(make_process(job, "h", pid, 0, 1), format::kTraceStateOpen, 0),
              {call(0), call(1)});
  ReadOnlyFile read_only(path);
  if (!read_only.ok()) GTEST_SKIP() << "cannot make a file unwritable for root here";
  TestSegment seg(job, "h", pid, 8, path);
  seg.put(2, call(2));
  seg.set_positions(2, 3);
  SalvageResult r = salvage_segment(seg.name(), {});
  EXPECT_EQ(r.status, SalvageStatus::kFailed);
  EXPECT_NE(r.message.find("give --dir"), std::string::npos) << r.message;
  SalvageOptions options;
  options.dir = out.path();
  r = salvage_segment(seg.name(), options);
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_EQ(r.trace_path, out.file(trace_name("h", pid)));
  EXPECT_EQ(seqs_in(r.trace_path), (std::vector<uint64_t>{0, 1, 2}));
}

// Runs `body` in a child process in a private mount namespace where `dir` is a tmpfs of
// `bytes`: a file system that fills up without touching any real one. 0: body returned true;
// 77: no mount namespaces here (not root, or a container that forbids them).
int in_small_tmpfs(const std::string& dir, std::size_t bytes, const std::function<bool()>& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + std::to_string(bytes)).c_str()) != 0)
      ::_exit(77);
    ::_exit(body() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Writes until the file system holding `dir` is full.
void fill(const std::string& dir) {
  const int fd = ::open((dir + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char> block(4096, 'f');
  while (fd >= 0 && ::write(fd, block.data(), block.size()) > 0) {
  }
  if (fd >= 0) ::close(fd);
}

// The trace file's own file system is full: the records go to --dir, whole (what the file
// held plus the ring), and the full one is left as it was.
TEST(Salvage, FullFileSystemFallsBackToDir) {
  TempDir small, out;
  const std::string job = unique_job("enospc");
  const int64_t pid = dead_pid();
  const std::string path = small.file(trace_name("h", pid));
  TestSegment seg(job, "h", pid, 256, path);
  for (uint32_t pos = 0; pos < 200; ++pos) seg.put(pos, call(pos));
  seg.set_positions(5, 200);
  SalvageOptions options;
  options.dir = out.path();
  const int rc = in_small_tmpfs(small.path(), 64 * 1024, [&] {
    std::vector<Record> on_disk;
    for (uint32_t i = 0; i < 5; ++i) on_disk.push_back(call(i));
    write_trace(path, make_header(make_process(job, "h", pid, 0, 1), format::kTraceStateOpen, 0),
                on_disk);
    const auto before = read_bytes(path);
    fill(small.path());
    const SalvageResult r = salvage_segment(seg.name(), options);
    std::fprintf(stderr, "%s\n", describe(r).c_str());
    return r.status == SalvageStatus::kSalvaged && r.trace_path == out.file(trace_name("h", pid)) &&
           r.in_file == 5 && r.appended == 195 && r.rank == 0 &&
           describe(r).find("No space left on device") != std::string::npos &&
           read_bytes(path) == before;
  });
  if (rc == 77) GTEST_SKIP() << "needs a private mount namespace (root) for a small tmpfs";
  ASSERT_EQ(rc, 0);
  seg.release();
  std::vector<uint64_t> all(200);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(seqs_in(out.file(trace_name("h", pid))), all);
}

TEST(Salvage, TracePathInAMissingDirectoryFallsBackToDir) {
  TempDir out;
  const std::string job = unique_job("gone");
  const int64_t pid = dead_pid();
  TestSegment seg(job, "h", pid, 8, out.file("no/such/dir/" + trace_name("h", pid)));
  seg.put(0, call(0));
  seg.put(1, call(1));
  SalvageOptions options;
  options.dir = out.path();
  const SalvageResult r = salvage_segment(seg.name(), options);
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_EQ(r.trace_path, out.file(trace_name("h", pid)));
  EXPECT_NE(describe(r).find("wrote " + r.trace_path + " instead"), std::string::npos)
      << describe(r);
  EXPECT_EQ(seqs_in(r.trace_path), (std::vector<uint64_t>{0, 1}));
}

TEST(Salvage, NoTracePathUsesDir) {
  TempDir out;
  const std::string job = unique_job("nopath");
  const int64_t pid = dead_pid();
  TestSegment seg(job, "nodeZ", pid, 8, "");
  seg.put(0, call(0));
  SalvageOptions options;
  options.dir = out.file("new/sub");  // created, as `ncclwatch run` creates its --dir
  const SalvageResult r = salvage_segment(seg.name(), options);
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  seg.release();
  EXPECT_EQ(r.trace_path, out.file("new/sub/ncclwatch.nodeZ." + std::to_string(pid) + ".trace"));
}

TEST(Salvage, RefusesAnotherProcesssFileAndForeignFiles) {
  TempDir dir;
  const std::string job = unique_job("other");
  const int64_t pid = dead_pid();
  const std::string path = dir.file(trace_name("h", pid));
  write_trace(path, make_header(make_process(job, "h", pid + 1, 0, 1), format::kTraceStateOpen, 0),
              {call(0)});
  TestSegment seg(job, "h", pid, 8, path);
  seg.put(0, call(0));
  SalvageResult r = salvage_segment(seg.name(), {});
  EXPECT_EQ(r.status, SalvageStatus::kFailed);
  EXPECT_NE(r.message.find("belongs to another process"), std::string::npos) << r.message;
  write_bytes(path, std::vector<char>(1000, 'x'));
  r = salvage_segment(seg.name(), {});
  EXPECT_EQ(r.status, SalvageStatus::kFailed);
  EXPECT_NE(r.message.find("not an ncclwatch trace"), std::string::npos) << r.message;
  EXPECT_EQ(read_bytes(path).size(), 1000u);  // not touched
  EXPECT_TRUE(segment_exists(seg.name()));
}

TEST(Salvage, AlreadySalvagedFileOnlyRemovesTheSegment) {
  TempDir dir;
  const std::string job = unique_job("again");
  const int64_t pid = dead_pid();
  const std::string path = dir.file(trace_name("h", pid));
  write_trace(path, make_header(make_process(job, "h", pid, 0, 1), format::kTraceStateSalvaged, 2),
              {call(0), call(2)});
  TestSegment seg(job, "h", pid, 8, path);
  seg.put(0, call(0));
  seg.put(2, call(2));
  const SalvageResult r = salvage_segment(seg.name(), {});
  EXPECT_EQ(r.status, SalvageStatus::kAlreadySalvaged) << describe(r);
  seg.release();
  EXPECT_FALSE(segment_exists(seg.name()));
  EXPECT_EQ(seqs_in(path), (std::vector<uint64_t>{0, 2}));
}

TEST(Salvage, BadSegmentsFailWithALine) {
  const std::string job = unique_job("bad");
  const int64_t pid = dead_pid();
  TestSegment seg(job, "h", pid, 8, "/tmp/x.trace");
  seg.header().capacity = 1024;  // more than the mapping holds
  SalvageResult r = salvage_segment(seg.name(), {});
  EXPECT_EQ(r.status, SalvageStatus::kSkippedUnusable);  // one line, never fatal
  EXPECT_NE(r.message.find("capacity 1024 does not fit"), std::string::npos) << r.message;
  seg.header().capacity = 6;
  r = salvage_segment(seg.name(), {});
  EXPECT_NE(r.message.find("power of two"), std::string::npos) << r.message;
  seg.header().capacity = 8;
  seg.header().magic = 42;
  r = salvage_segment(seg.name(), {});
  EXPECT_NE(r.message.find("bad magic"), std::string::npos) << r.message;
  seg.header().magic = format::kSegmentMagic;
  seg.header().layout_version = format::kLayoutVersion + 1;
  r = salvage_segment(seg.name(), {});
  EXPECT_NE(r.message.find("layout version " + std::to_string(format::kLayoutVersion + 1)),
            std::string::npos)
      << r.message;
  seg.header().layout_version = format::kLayoutVersion;
  seg.set_positions(5, 2);
  r = salvage_segment(seg.name(), {});
  EXPECT_NE(r.message.find("read position 5 beyond write position 2"), std::string::npos)
      << r.message;
  r = salvage_segment("ncclwatch." + job + ".missing", {});
  EXPECT_NE(r.message.find("cannot open segment"), std::string::npos) << r.message;
  EXPECT_EQ(r.status, SalvageStatus::kSkippedUnusable);
  EXPECT_TRUE(segment_exists(seg.name()));
}

TEST(Salvage, SalvageJobTakesOnlyThatJobsSegments) {
  TempDir dir;
  const std::string job = unique_job("job");
  const int64_t pid = dead_pid();
  TestSegment a(job, "h", pid, 8, dir.file(trace_name("h", pid)));
  TestSegment b(job + ".b", "h", pid, 8, dir.file(trace_name("h", pid)));  // prefix-alike job
  a.put(0, call(0));
  b.put(0, call(0));
  const auto listed = list_segments(job);
  EXPECT_EQ(listed.size(), 2u);  // by name both match; the header tells them apart
  const auto results = salvage_job(job, {});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].segment, a.name());
  EXPECT_EQ(results[0].status, SalvageStatus::kSalvaged) << describe(results[0]);
  a.release();
  EXPECT_TRUE(segment_exists(b.name()));
}

TEST(Salvage, ProcessAlive) {
  EXPECT_TRUE(process_alive(::getpid()));
  EXPECT_FALSE(process_alive(dead_pid()));
  EXPECT_FALSE(process_alive(0));
  EXPECT_FALSE(process_alive(-5));
  // A killed child nobody reaped yet is a zombie, and dead for salvage.
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ::kill(child, SIGKILL);
  siginfo_t info{};
  ::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT);
  EXPECT_FALSE(process_alive(child));
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace ncclwatch::trace

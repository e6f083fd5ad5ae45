// The recorder API without LD_PRELOAD: settings, the segment and trace file of a recorder, its
// life cycle (inert until used, finish, fork), overflow and the failure paths.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "../support/trace_file.h"
#include "record/clock.h"
#include "record/process_identity.h"
#include "record/recorder.h"
#include "record/recorder_control.h"
#include "record/segment.h"
#include "record/settings.h"

namespace ncclwatch::shim {
namespace {

std::map<std::string, std::string> g_env;
const char* fake_env(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

format::Record call_record(uint64_t i) {
  format::Record r{};
  r.call.prefix.kind = format::RecordKind::kCall;
  r.call.prefix.u8a = static_cast<uint8_t>(format::Func::kAllReduce);
  r.call.seq = static_cast<uint32_t>(i);
  r.call.t_enter_ns = now_ns();
  r.call.t_exit_ns = now_ns();
  return r;
}

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/ncclwatch-rectest-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    setenv("NCCLWATCH_DIR", dir_.c_str(), 1);
    setenv("NCCLWATCH_JOB", ("rectest-" + std::to_string(getpid())).c_str(), 1);
    setenv("NCCLWATCH_HOST", "testhost", 1);
    unsetenv("NCCLWATCH_RING_MB");
    unsetenv("NCCLWATCH_TEST_DRAIN_HOLD");
    unsetenv("NCCLWATCH");
    setenv("NCCLWATCH_DETAIL", "all", 1);  // every record counted (docs/always-on.md)
    load_settings(&process_env);           // the snapshot the shim takes at load
  }
  void TearDown() override {
    finish_recorder();
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string dir_;
};

TEST(Settings, IdentityFromLaunchers) {
  g_env = {{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "16"}, {"SLURM_PROCID", "9"}};
  EnvIdentity id = identity_from_env(&fake_env);
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.world_size, 16);
  EXPECT_EQ(id.local_rank, -1);
  g_env = {{"RANK", "x"}, {"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "12"}};
  id = identity_from_env(&fake_env);
  EXPECT_EQ(id.rank, 9);  // a bad RANK is skipped
  EXPECT_EQ(id.world_size, 12);
  // Intel MPI's hydra inside a Slurm allocation: SLURM_* describe the proxy, PMI_* the rank.
  g_env = {{"PMI_RANK", "6"},
           {"PMI_SIZE", "8"},
           {"SLURM_PROCID", "1"},
           {"SLURM_LOCALID", "0"},
           {"MPI_LOCALRANKID", "2"}};
  id = identity_from_env(&fake_env);
  EXPECT_EQ(id.rank, 6);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.local_rank, 2);
  // MVAPICH2 (mpirun_rsh), as NCCL's log capture already read it.
  g_env = {{"MV2_COMM_WORLD_RANK", "3"},
           {"MV2_COMM_WORLD_SIZE", "4"},
           {"MV2_COMM_WORLD_LOCAL_RANK", "1"}};
  id = identity_from_env(&fake_env);
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.world_size, 4);
  EXPECT_EQ(id.local_rank, 1);
}

TEST(Clock, Anchors) {
  ClockAnchor a = read_clock_anchor();
  EXPECT_GE(a.window_ns, 0);
  EXPECT_GT(a.realtime_ns, a.monotonic_ns - clock_test_offset_ns());  // epoch vs boot time
}

TEST(Segment, CapacityIsPowerOfTwoThatFits) {
  EXPECT_EQ(Segment::capacity_for(16), 131072u);
  uint64_t cap = Segment::capacity_for(0.01);
  EXPECT_EQ(cap & (cap - 1), 0u);
  EXPECT_LE(sizeof(format::SegmentHeader) + cap * sizeof(format::RingSlot), 0.01 * 1048576);
}

TEST_F(RecorderTest, InertUntilFirstUse) {
  EXPECT_FALSE(recording());
  EXPECT_FALSE(emit(call_record(0)));
  EXPECT_EQ(current_trace_path(), "");
  EXPECT_FALSE(exists(dir_));
}

TEST_F(RecorderTest, WritesRecordsInOrderAndClosesCleanly) {
  ASSERT_TRUE(ensure_recorder());
  std::string path = current_trace_path();
  std::string shm = "/dev/shm/" + current_segment_name();
  EXPECT_EQ(path, dir_ + "/ncclwatch.testhost." + std::to_string(getpid()) + ".trace");
  EXPECT_TRUE(exists(shm));
  struct stat st {};
  ASSERT_EQ(stat(shm.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(emit(call_record(i)));
  finish_recorder();
  EXPECT_FALSE(exists(shm));  // removed on normal finish
  auto t = testing::TraceFile::read(path);
  ASSERT_TRUE(t.ok);
  EXPECT_EQ(t.header.state, format::kTraceStateClosed);
  EXPECT_EQ(t.header.layout_version, format::kLayoutVersion);
  EXPECT_EQ(t.header.records, t.records.size());
  EXPECT_EQ(t.header.dropped, 0u);
  EXPECT_STREQ(t.header.process.host, "testhost");
  EXPECT_EQ(t.header.process.pid, getpid());
  auto calls = t.calls(format::Func::kAllReduce);
  ASSERT_EQ(calls.size(), 1000u);
  for (uint32_t i = 0; i < 1000; ++i) EXPECT_EQ(calls[i].seq, i);
  EXPECT_GE(t.count(format::RecordKind::kClock), 2u);  // at start and at close
}

TEST_F(RecorderTest, OverflowCountsDropsAndKeepsTheRest) {
  setenv("NCCLWATCH_RING_MB", "0.01", 1);  // 64 slots
  setenv("NCCLWATCH_TEST_DRAIN_HOLD", "1", 1);
  load_settings(&process_env);
  ASSERT_TRUE(ensure_recorder());
  std::string path = current_trace_path();
  uint64_t accepted = 0;
  for (uint64_t i = 0; i < 500; ++i) accepted += emit(call_record(i)) ? 1 : 0;
  EXPECT_LT(accepted, 64u);
  finish_recorder();
  auto t = testing::TraceFile::read(path);
  ASSERT_TRUE(t.ok);
  auto calls = t.calls(format::Func::kAllReduce);
  ASSERT_EQ(calls.size(), accepted);
  for (uint32_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].seq, i);  // a prefix, intact
  // 500 - accepted calls dropped, plus the closing clock anchor that found the ring full.
  EXPECT_EQ(t.header.dropped, 500 - accepted + 1);
  EXPECT_EQ(t.records.size() + t.header.dropped, 500 + t.count(format::RecordKind::kClock) + 1);
}

// Every loss counter travels from the counting thread through the segment into the closed trace
// file's header, each into its own field (distinct values catch a swapped copy).
TEST_F(RecorderTest, LossCountersReachTheTraceHeader) {
  ASSERT_TRUE(ensure_recorder());
  const std::string path = current_trace_path();
  uint64_t n = 3;
  for (const auto& f : format::kLossFields) add_loss(f.counter, n++);
  add_loss(&format::LossCounts::names_lost, 0);  // adding nothing changes nothing
  finish_recorder();
  auto t = testing::TraceFile::read(path);
  ASSERT_TRUE(t.ok);
  n = 3;
  for (const auto& f : format::kLossFields) EXPECT_EQ(t.header.losses.*f.counter, n++) << f.key;
  EXPECT_EQ(t.header.dropped, 0u);
}

// The drain thread samples the CPU scheduling of the threads that entered a hooked call: at least
// the last reading at exit, for this thread, and none for threads that never called NCCL.
TEST_F(RecorderTest, SchedRecordsOfTheThreadsThatCallNccl) {
  const std::string proc = "/proc/self/task/" + std::to_string(thread_id()) + "/schedstat";
  if (access(proc.c_str(), R_OK) != 0) GTEST_SKIP() << proc << " is not readable here";
  ASSERT_TRUE(ensure_recorder());
  const std::string path = current_trace_path();
  format::CallEntry entry{};
  entry.t_enter_ns = now_ns();
  entry.func = static_cast<uint8_t>(format::Func::kAllReduce);
  mark_entered(entry);
  mark_returned();
  finish_recorder();
  auto t = testing::TraceFile::read(path);
  ASSERT_TRUE(t.ok);
  ASSERT_GE(t.count(format::RecordKind::kSched), 1u);
  int64_t last_t = 0;
  for (const auto& r : t.records) {
    if (r.prefix.kind != format::RecordKind::kSched) continue;
    EXPECT_EQ(r.prefix.tid, thread_id());
    EXPECT_GT(r.sched.on_cpu_ns, 0u);
    EXPECT_GE(r.sched.t_ns, last_t);
    last_t = r.sched.t_ns;
  }
}

TEST_F(RecorderTest, OffCreatesNothing) {
  setenv("NCCLWATCH", "off", 1);
  load_settings(&process_env);
  pid_t pid = fork();
  if (pid == 0) _exit(ensure_recorder() || recording() ? 1 : 0);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(exists(dir_));
}

// A ring larger than /dev/shm can hold (issue 10 item 6): one line, then the default size, not
// recording off. (A /dev/shm too full for the default size too: recording off, one line.)
TEST_F(RecorderTest, RingLargerThanShmFallsBackToTheDefaultWithOneLine) {
  struct statvfs vfs {};
  ASSERT_EQ(statvfs("/dev/shm", &vfs), 0);
  double shm_mb = static_cast<double>(vfs.f_blocks) * vfs.f_frsize / 1048576.0;
  if (vfs.f_blocks == 0 || shm_mb * 2 > 1024.0 * 1024) GTEST_SKIP() << "/dev/shm size unknown";
  setenv("NCCLWATCH_RING_MB", std::to_string(static_cast<long>(shm_mb * 2)).c_str(), 1);
  load_settings(&process_env);
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(ensure_recorder());
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("ncclwatch: cannot reserve", 0), 0u) << err;
  EXPECT_NE(err.find("using the default 16 MiB ring"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
  EXPECT_TRUE(recording());
  EXPECT_TRUE(emit(call_record(0)));
  std::string segment =
      "/dev/shm/" + Segment::name_for("rectest-" + std::to_string(getpid()), "testhost", getpid());
  struct stat st {};
  ASSERT_EQ(stat(segment.c_str(), &st), 0);
  EXPECT_LE(static_cast<double>(st.st_size), kDefaultRingMb * 1048576.0);
}

TEST_F(RecorderTest, UnwritableDirTurnsRecordingOff) {
  setenv("NCCLWATCH_DIR", "/proc/ncclwatch-cannot-exist", 1);
  load_settings(&process_env);
  pid_t pid = fork();
  if (pid == 0) {
    bool on = ensure_recorder();
    bool segment_left =
        exists("/dev/shm/" +
               Segment::name_for("rectest-" + std::to_string(getppid()), "testhost", getpid()));
    _exit(on || segment_left ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The trace dir may be writable by others (docs/threat-model.md): a symlink planted at the
// predictable trace path must never be followed. Root may remove it and create its own file;
// anyone else cannot remove another user's name in a sticky dir and records nothing.
TEST_F(RecorderTest, SymlinkAtTheTracePathIsNeverFollowed) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 01777), 0);
  const std::string victim = dir_ + ".victim";
  {
    int fd = ::open(victim.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "keep", 4), 4);
    ::close(fd);
  }
  const std::string path = dir_ + "/ncclwatch.testhost." + std::to_string(getpid()) + ".trace";
  ASSERT_EQ(symlink(victim.c_str(), path.c_str()), 0);
  ::testing::internal::CaptureStderr();
  const bool on = ensure_recorder();
  const std::string err = ::testing::internal::GetCapturedStderr();
  struct stat st {};
  ASSERT_EQ(stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4);  // the target is untouched either way
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  if (on) {
    EXPECT_TRUE(S_ISREG(st.st_mode)) << "the symlink was replaced by our own file";
  } else {
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    EXPECT_EQ(err.rfind("ncclwatch: cannot create", 0), 0u) << err;
  }
  finish_recorder();
  ASSERT_EQ(stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4);
  ::unlink(victim.c_str());
}

TEST_F(RecorderTest, ForkedChildStartsClean) {
  ASSERT_TRUE(ensure_recorder());
  std::string parent_path = current_trace_path();
  for (uint64_t i = 0; i < 10; ++i) emit(call_record(i));
  pid_t pid = fork();
  if (pid == 0) {
    // No inherited recorder: nothing recorded until the child starts its own.
    bool clean = !recording() && !emit(call_record(1000)) && current_trace_path().empty();
    bool own = ensure_recorder() && current_trace_path() != parent_path;
    emit(call_record(2000));
    finish_recorder();
    _exit(clean && own ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (uint64_t i = 10; i < 20; ++i) emit(call_record(i));
  finish_recorder();
  auto parent = testing::TraceFile::read(parent_path);
  auto calls = parent.calls(format::Func::kAllReduce);
  ASSERT_EQ(calls.size(), 20u);
  for (uint32_t i = 0; i < 20; ++i) EXPECT_EQ(calls[i].seq, i);
  auto child =
      testing::TraceFile::read(dir_ + "/ncclwatch.testhost." + std::to_string(pid) + ".trace");
  ASSERT_TRUE(child.ok);
  auto child_calls = child.calls(format::Func::kAllReduce);
  ASSERT_EQ(child_calls.size(), 1u);
  EXPECT_EQ(child_calls[0].seq, 2000u);
}

TEST_F(RecorderTest, IdentityFromFirstCommunicatorWhenEnvHasNone) {
  for (const char* v : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) unsetenv(v);
  ASSERT_TRUE(ensure_recorder());
  std::string path = current_trace_path();
  note_communicator(3, 8, 1);
  note_communicator(0, 2, 0);  // only the first comm counts
  finish_recorder();
  auto t = testing::TraceFile::read(path);
  EXPECT_EQ(t.header.process.rank, 3);
  EXPECT_EQ(t.header.process.world_size, 8);
  EXPECT_EQ(t.header.process.device, 1);
  ASSERT_EQ(t.count(format::RecordKind::kIdentity), 1u);
  for (const auto& r : t.records) {
    if (r.prefix.kind != format::RecordKind::kIdentity) continue;
    EXPECT_EQ(r.identity.prefix.u8a, static_cast<uint8_t>(format::RankSource::kFirstComm));
    EXPECT_EQ(r.identity.rank, 3);
  }
}

}  // namespace
}  // namespace ncclwatch::shim

// Salvage against a hostile neighbour (docs/threat-model.md): another user (nobody) plants
// segments, symlinks, FIFOs and trace files; salvage run as root must write nothing it was not
// meant to, skip what is not its own with one line, and still salvage its own segments. The
// segments live in a private stand-in for /dev/shm (a sticky, world-writable directory like
// /dev/shm itself), so nothing is ever left in the real one. Two users need root: the tests
// skip otherwise.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "trace/rank_loader.h"
#include "trace/salvage.h"
#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

using namespace testing;  // NOLINT: the fixture's builders
namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

Record call(uint32_t seq) {
  return make_call(Func::kAllReduce, 0x99, seq, 1000 + 100 * int64_t{seq},
                   1050 + 100 * int64_t{seq});
}

int64_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

std::string trace_name(const std::string& host, int64_t pid) {
  return "ncclwatch." + host + "." + std::to_string(pid) + ".trace";
}

// Runs `body` in a child process that is user nobody; true if it ran and returned true.
bool as_nobody(const std::function<bool()>& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    bool ok = ::setgroups(0, nullptr) == 0 && ::setresgid(kNogroup, kNogroup, kNogroup) == 0 &&
              ::setresuid(kNobody, kNobody, kNobody) == 0;
    try {
      ok = ok && body();
    } catch (...) {
      ok = false;
    }
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void write_text(const std::string& path, const std::string& text, mode_t mode = 0600) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
}

std::string read_text(const std::string& path) {
  const auto bytes = read_bytes(path);
  return {bytes.begin(), bytes.end()};
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_symlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

class HostileSalvage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root: plants files as user nobody and salvages as root";
    // Everything below base_ (0755, so nobody can reach the world-writable parts).
    ASSERT_EQ(::chmod(base_.path().c_str(), 0755), 0);
    shm_ = base_.file("shm");
    ASSERT_EQ(::mkdir(shm_.c_str(), 0755), 0);
    ASSERT_EQ(::chmod(shm_.c_str(), 01777), 0);  // like /dev/shm
    root_only_ = base_.file("root-only");
    ASSERT_EQ(::mkdir(root_only_.c_str(), 0700), 0);
    shared_ = base_.file("shared");  // a trace dir every user may write (sticky, like /tmp)
    ASSERT_EQ(::mkdir(shared_.c_str(), 0755), 0);
    ASSERT_EQ(::chmod(shared_.c_str(), 01777), 0);
    out_ = base_.file("out");
    ASSERT_EQ(::mkdir(out_.c_str(), 0755), 0);
    options_.shm_dir = shm_;
    job_ = unique_job("hostile");
  }

  // Root's own dead rank with records 0..2 in its ring and no trace file yet.
  std::unique_ptr<TestSegment> own_segment(const std::string& host, int64_t pid,
                                           const std::string& trace_path) {
    auto seg = std::make_unique<TestSegment>(job_, host, pid, 8, trace_path, shm_);
    for (uint32_t i = 0; i < 3; ++i) seg->put(i, call(i));
    return seg;
  }

  // A segment nobody plants in the shm dir (a well-formed one: only its owner is wrong).
  bool plant_segment(const std::string& host, int64_t pid, const std::string& trace_path) {
    return as_nobody([&] {
      TestSegment seg(job_, host, pid, 8, trace_path, shm_);
      for (uint32_t i = 0; i < 3; ++i) seg.put(i, call(100 + i));
      seg.header().state = format::kSegmentStateClosed;
      seg.release();
      return true;
    });
  }

  static const SalvageResult* find(const std::vector<SalvageResult>& results,
                                   const std::string& segment) {
    for (const auto& r : results)
      if (r.segment == segment) return &r;
    return nullptr;
  }

  TempDir base_;
  std::string shm_, root_only_, shared_, out_, job_;
  SalvageOptions options_;
};

TEST_F(HostileSalvage, PlantedSegmentsNamingRootFilesAreSkippedAndNothingIsWritten) {
  const int64_t pid = dead_pid();
  const int64_t pid2 = pid + 1000000;  // any pid: never alive, never checked
  const std::string victim = root_only_ + "/victim.conf";
  write_text(victim, "root only\n");
  // One aims at a new root-owned file in a root-only directory (with the very name salvage
  // would derive), one at an existing root file.
  ASSERT_TRUE(plant_segment("h", pid, root_only_ + "/" + trace_name("h", pid)));
  ASSERT_TRUE(plant_segment("g", pid2, victim));
  const std::string planted1 = "ncclwatch." + job_ + ".h." + std::to_string(pid);
  const std::string planted2 = "ncclwatch." + job_ + ".g." + std::to_string(pid2);
  // Root's own dead rank of the same job, still salvaged.
  const int64_t mine = dead_pid();
  auto own = own_segment("m", mine, out_ + "/" + trace_name("m", mine));

  options_.dir = out_;  // a fallback must not be used for other users' segments either
  const auto results = salvage_job(job_, options_);
  ASSERT_EQ(results.size(), 3u);
  for (const auto* name : {&planted1, &planted2}) {
    const SalvageResult* r = find(results, *name);
    ASSERT_NE(r, nullptr) << *name;
    EXPECT_EQ(r->status, SalvageStatus::kSkippedForeign) << describe(*r);
    EXPECT_NE(describe(*r).find("skipped (not yours): owned by uid 65534"), std::string::npos)
        << describe(*r);
    EXPECT_TRUE(fs::exists(shm_ + "/" + *name)) << "left for its owner";
  }
  const SalvageResult* r = find(results, own->name());
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->status, SalvageStatus::kSalvaged) << describe(*r);
  own->release();
  EXPECT_EQ(names_in(root_only_), std::vector<std::string>{"victim.conf"});
  EXPECT_EQ(read_text(victim), "root only\n");
  EXPECT_EQ(names_in(out_), std::vector<std::string>{trace_name("m", mine)});
}

TEST_F(HostileSalvage, SymlinksAndFifosNamedLikeSegmentsAreSkippedWithoutBlocking) {
  const int64_t mine = dead_pid();
  auto own = own_segment("m", mine, out_ + "/" + trace_name("m", mine));
  // nobody's symlink to root's own segment, nobody's FIFO; root's own symlink and FIFO (a
  // stray of ours is no more a segment).
  const std::string target = shm_ + "/" + own->name();
  const std::string prefix = shm_ + "/ncclwatch." + job_;
  ASSERT_TRUE(as_nobody([&] {
    return ::symlink(target.c_str(), (prefix + ".n.1").c_str()) == 0 &&
           ::mkfifo((prefix + ".n.2").c_str(), 0666) == 0;
  }));
  ASSERT_EQ(::symlink(target.c_str(), (prefix + ".r.3").c_str()), 0);
  ASSERT_EQ(::mkfifo((prefix + ".r.4").c_str(), 0600), 0);

  const auto results = salvage_job("", options_);  // every segment, as plain `collect` does
  ASSERT_EQ(results.size(), 5u);
  int foreign = 0, unusable = 0, salvaged = 0;
  for (const auto& r : results) {
    EXPECT_NE(r.status, SalvageStatus::kFailed) << describe(r);
    if (r.status == SalvageStatus::kSkippedForeign) ++foreign;
    if (r.status == SalvageStatus::kSkippedUnusable) {
      ++unusable;
      EXPECT_TRUE(describe(r).find("a symbolic link") != std::string::npos ||
                  describe(r).find("a FIFO") != std::string::npos)
          << describe(r);
    }
    if (r.status == SalvageStatus::kSalvaged) ++salvaged;
  }
  EXPECT_EQ(foreign, 2);
  EXPECT_EQ(unusable, 2);
  EXPECT_EQ(salvaged, 1);
  own->release();
  EXPECT_TRUE(is_symlink(prefix + ".n.1"));  // nothing removed that was not ours to remove
}

TEST_F(HostileSalvage, SymlinkAtTheTracePathIsNotFollowed) {
  const int64_t pid = dead_pid();
  const std::string victim = root_only_ + "/victim.conf";
  write_text(victim, "root only\n");
  const std::string trace = shared_ + "/" + trace_name("h", pid);
  ASSERT_TRUE(as_nobody([&] { return ::symlink(victim.c_str(), trace.c_str()) == 0; }));
  auto own = own_segment("h", pid, trace);

  SalvageResult r = salvage_segment(own->name(), options_);
  EXPECT_EQ(r.status, SalvageStatus::kFailed) << describe(r);
  EXPECT_NE(r.message.find("is a symbolic link; not followed"), std::string::npos) << r.message;
  EXPECT_EQ(read_text(victim), "root only\n");
  EXPECT_TRUE(fs::exists(shm_ + "/" + own->name()));  // kept for a retry with --dir

  options_.dir = out_;
  r = salvage_segment(own->name(), options_);
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  own->release();
  EXPECT_EQ(r.trace_path, out_ + "/" + trace_name("h", pid));
  EXPECT_EQ(read_text(victim), "root only\n");
  EXPECT_TRUE(is_symlink(trace));
  std::vector<model::InputProblem> problems;
  EXPECT_EQ(load_rank(r.trace_path, problems).calls.size(), 3u);
}

TEST_F(HostileSalvage, TraceFilePlantedByAnotherUserIsNotRewritten) {
  const int64_t pid = dead_pid();
  const std::string trace = shared_ + "/" + trace_name("h", pid);
  // A valid-looking trace of the very same process, but nobody's: its contents are theirs.
  ASSERT_TRUE(as_nobody([&] {
    write_trace(trace, make_header(make_process(job_, "h", pid, 0, 1), format::kTraceStateOpen, 0),
                {call(7)});
    return true;
  }));
  const auto before = read_bytes(trace);
  auto own = own_segment("h", pid, trace);
  SalvageResult r = salvage_segment(own->name(), options_);
  EXPECT_EQ(r.status, SalvageStatus::kFailed) << describe(r);
  EXPECT_NE(r.message.find("belongs to uid 65534"), std::string::npos) << r.message;
  EXPECT_EQ(read_bytes(trace), before);
  // With --dir the records go there, and the planted file's records are not taken as ours.
  options_.dir = out_;
  r = salvage_segment(own->name(), options_);
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  own->release();
  EXPECT_EQ(r.in_file, 0u);
  EXPECT_EQ(read_bytes(trace), before);
}

TEST_F(HostileSalvage, HardLinkedTraceFileIsNotRewritten) {
  // Where hard links to other users' files are allowed (fs.protected_hardlinks=0), a link at
  // the trace path names a file that is not the trace's own.
  const int64_t pid = dead_pid();
  const std::string victim = root_only_ + "/victim.trace";
  write_trace(victim, make_header(make_process(job_, "h", pid, 0, 1), format::kTraceStateOpen, 0),
              {call(0)});
  const auto before = read_bytes(victim);
  const std::string trace = shared_ + "/" + trace_name("h", pid);
  ASSERT_EQ(::link(victim.c_str(), trace.c_str()), 0);
  auto own = own_segment("h", pid, trace);
  const SalvageResult r = salvage_segment(own->name(), options_);
  EXPECT_EQ(r.status, SalvageStatus::kFailed) << describe(r);
  EXPECT_NE(r.message.find("has 2 hard links; not touched"), std::string::npos) << r.message;
  EXPECT_EQ(read_bytes(victim), before);
}

TEST_F(HostileSalvage, TraceDirsOthersControlAreNotWritten) {
  const int64_t pid = dead_pid();
  // Writable by everyone without the sticky bit: anyone may swap names in it.
  const std::string open_dir = base_.file("open");
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  auto a = own_segment("h", pid, open_dir + "/" + trace_name("h", pid));
  SalvageResult r = salvage_segment(a->name(), options_);
  EXPECT_EQ(r.status, SalvageStatus::kFailed) << describe(r);
  EXPECT_NE(r.message.find("writable by everyone without the sticky bit"), std::string::npos)
      << r.message;
  EXPECT_TRUE(names_in(open_dir).empty());
  // Owned by another user.
  const int64_t pid2 = dead_pid();
  const std::string theirs = base_.file("theirs");
  ASSERT_EQ(::mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(::chown(theirs.c_str(), kNobody, kNogroup), 0);
  auto b = own_segment("h", pid2, theirs + "/" + trace_name("h", pid2));
  r = salvage_segment(b->name(), options_);
  EXPECT_EQ(r.status, SalvageStatus::kFailed) << describe(r);
  EXPECT_NE(r.message.find("belongs to uid 65534"), std::string::npos) << r.message;
  EXPECT_TRUE(names_in(theirs).empty());
}

TEST_F(HostileSalvage, OnlyTheDerivedFileNameIsEverWritten) {
  // Our own segment whose header names some other file (a corrupted or crafted header): the
  // header chooses at most a directory, never the file.
  const int64_t pid = dead_pid();
  const std::string victim = out_ + "/victim.conf";
  write_text(victim, "keep\n");
  auto own = own_segment("h", pid, victim);
  SalvageResult r = salvage_segment(own->name(), options_);
  EXPECT_EQ(r.status, SalvageStatus::kFailed) << describe(r);
  EXPECT_NE(r.message.find("not <dir>/" + trace_name("h", pid)), std::string::npos) << r.message;
  options_.dir = out_;
  r = salvage_segment(own->name(), options_);
  ASSERT_EQ(r.status, SalvageStatus::kSalvaged) << describe(r);
  own->release();
  EXPECT_EQ(r.trace_path, out_ + "/" + trace_name("h", pid));
  EXPECT_EQ(read_text(victim), "keep\n");
  // A header whose identity does not match the segment's name is not a segment of ours.
  auto odd = std::make_unique<TestSegment>(job_, "h", pid + 1000000, 8,
                                           out_ + "/" + trace_name("h", pid), shm_);
  std::strncpy(odd->header().process.host, "../../etc", sizeof odd->header().process.host);
  r = salvage_segment(odd->name(), options_);
  EXPECT_EQ(r.status, SalvageStatus::kSkippedUnusable) << describe(r);
  EXPECT_NE(r.message.find("is not a valid one"), std::string::npos) << r.message;
}

TEST_F(HostileSalvage, OwnSegmentWritableByOthersIsNotRead) {
  const int64_t pid = dead_pid();
  auto own = own_segment("h", pid, out_ + "/" + trace_name("h", pid));
  ASSERT_EQ(::chmod((shm_ + "/" + own->name()).c_str(), 0666), 0);
  const SalvageResult r = salvage_segment(own->name(), options_);
  EXPECT_EQ(r.status, SalvageStatus::kSkippedUnusable) << describe(r);
  EXPECT_NE(r.message.find("writable by others (mode 666)"), std::string::npos) << r.message;
  EXPECT_TRUE(names_in(out_).empty());
}

}  // namespace
}  // namespace ncclwatch::trace

// Saved Python stacks next to the traces (trace/stack_file.h): written through a temporary file
// and a rename, read back only when they are this user's regular files of the right process and
// job, bounded in size; anything planted, truncated or malformed is a note, never a crash.
#include "trace/stack_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "trace/python_stack.h"
#include "trace_fixture.h"

namespace ncclwatch::trace {
namespace {

const char* kDump = R"(Process 31: python3 stuck.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 31 (idle): "MainThread"
    get (/usr/lib/python3.11/queue.py:171)
    load_batch (/srv/job/stuck.py:52)
    train (/srv/job/stuck.py:60)
)";

StackFileHeader header(int64_t pid = 31) {
  StackFileHeader h;
  h.job = "job-1";
  h.rank = 3;
  h.host = "node7";
  h.pid = pid;
  h.taken = "2026-12-04T15:00:00Z";
  h.why = "never entered all_reduce #4 on comm 0x00000000000000ab (entered #3)";
  return h;
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string get(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class StackFile : public ::testing::Test {
 protected:
  std::string saved(const std::string& text) {
    const std::string path = dir_.file(stack_file_name("node7", 31));
    put(path, text);
    return path;
  }
  SavedStack read() { return read_stack_file(dir_.path(), "node7", 31, "job-1"); }

  testing::TempDir dir_;
};

TEST_F(StackFile, WrittenThenReadBack) {
  std::string error;
  const std::string name = stack_file_name("node7", 31);
  EXPECT_EQ(name, "ncclwatch.node7.31.stack.txt");
  ASSERT_TRUE(write_stack_file(dir_.path(), name, render_stack_file(header(), kDump), &error))
      << error;
  const SavedStack s = read();
  ASSERT_TRUE(s.usable) << s.note;
  EXPECT_EQ(s.header.job, "job-1");
  EXPECT_EQ(s.header.rank, 3);
  EXPECT_EQ(s.header.host, "node7");
  EXPECT_EQ(s.header.pid, 31);
  EXPECT_EQ(s.header.taken, "2026-12-04T15:00:00Z");
  EXPECT_EQ(s.dump, kDump);
  EXPECT_EQ(locate(parse_py_spy_dump(s.dump)).where, "stuck.py:load_batch");
  // Nothing else left in the directory (the temporary file was renamed).
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_.path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(StackFile, NoFileIsNoNote) {
  const SavedStack s = read();
  EXPECT_FALSE(s.present);
  EXPECT_FALSE(s.usable);
  EXPECT_EQ(s.note, "");
}

TEST_F(StackFile, AHostNameNeverMakesAPath) {
  EXPECT_EQ(stack_file_name("../../etc/x", 5), "ncclwatch..._.._etc_x.5.stack.txt");
}

TEST_F(StackFile, ASymlinkIsNeitherReadNorWrittenThrough) {
  const std::string victim = dir_.file("victim");
  put(victim, render_stack_file(header(), kDump));
  const std::string name = stack_file_name("node7", 31);
  ASSERT_EQ(::symlink(victim.c_str(), dir_.file(name).c_str()), 0);
  SavedStack s = read();
  EXPECT_TRUE(s.present);
  EXPECT_FALSE(s.usable);
  EXPECT_NE(s.note.find("a symlink, not followed"), std::string::npos) << s.note;
  // Writing replaces the link itself; the file it pointed at is untouched.
  std::string error;
  ASSERT_TRUE(write_stack_file(dir_.path(), name, render_stack_file(header(), "x"), &error))
      << error;
  struct stat st {};
  ASSERT_EQ(::lstat(dir_.file(name).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(get(victim), render_stack_file(header(), kDump));
}

TEST_F(StackFile, AFifoIsNotReadAndDoesNotBlock) {
  ASSERT_EQ(::mkfifo(dir_.file(stack_file_name("node7", 31)).c_str(), 0600), 0);
  const SavedStack s = read();
  EXPECT_FALSE(s.usable);
  EXPECT_NE(s.note.find("not a regular file"), std::string::npos) << s.note;
}

TEST_F(StackFile, AnotherUsersFileIsNotUsed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: gives the file to user nobody";
  const std::string path = saved(render_stack_file(header(), kDump));
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  const SavedStack s = read();
  EXPECT_FALSE(s.usable);
  EXPECT_NE(s.note.find("owned by uid 65534, not by you"), std::string::npos) << s.note;
}

TEST_F(StackFile, TooLargeIsNotRead) {
  saved(render_stack_file(header(), kDump) + std::string(kMaxStackFileBytes, ' '));
  const SavedStack s = read();
  EXPECT_FALSE(s.usable);
  EXPECT_NE(s.note.find("more than a stack file's"), std::string::npos) << s.note;
}

TEST_F(StackFile, MalformedOnesSayWhy) {
  const std::string good = render_stack_file(header(), kDump);
  const std::pair<std::string, std::string> cases[] = {
      {"", "first line"},
      {"Thread 31 (idle): \"MainThread\"\n    f (a.py:1)\n", "first line"},
      {good.substr(0, good.find("# pid")), "no pid"},
      {good.substr(0, good.find("# why") + 4), "truncated in its header"},
      {render_stack_file(header(), ""), "no Python thread"},
      {render_stack_file(header(), "Error: Permission denied (os error 1)\n"), "no Python thread"},
      {render_stack_file(header(32), kDump), "pid 32, not this rank's"},
  };
  for (const auto& [text, why] : cases) {
    saved(text);
    const SavedStack s = read();
    EXPECT_TRUE(s.present);
    EXPECT_FALSE(s.usable) << text;
    EXPECT_NE(s.note.find(why), std::string::npos) << s.note << "\n" << text;
  }
  StackFileHeader other = header();
  other.job = "job-2";
  saved(render_stack_file(other, kDump));
  const SavedStack s = read();
  EXPECT_FALSE(s.usable);
  EXPECT_NE(s.note.find("written for job job-2, not job-1"), std::string::npos) << s.note;
  // Any job will do when the trace has none.
  EXPECT_TRUE(read_stack_file(dir_.path(), "node7", 31, "").usable);
}

TEST_F(StackFile, EveryTruncationAndByteFlipIsHandled) {
  const std::string good = render_stack_file(header(), kDump);
  for (std::size_t n = 0; n <= good.size(); ++n) {
    const SavedStack s = parse_stack_file(good.substr(0, n));
    if (s.usable)
      EXPECT_FALSE(parse_py_spy_dump(s.dump).threads.empty());
    else
      EXPECT_FALSE(s.note.empty()) << n;
  }
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (char c : {'\0', '\n', ':', '(', ')', '\xff'}) {
      std::string text = good;
      text[i] = c;
      const SavedStack s = parse_stack_file(text);
      locate(parse_py_spy_dump(s.dump));  // whatever it holds: no crash, bounded
    }
  }
}

TEST_F(StackFile, HeaderValuesStayOneLine) {
  StackFileHeader h = header();
  h.why = "two\nlines\x1b[2J";
  saved(render_stack_file(h, kDump));
  const SavedStack s = read();
  ASSERT_TRUE(s.usable) << s.note;
  EXPECT_EQ(s.header.why, "two?lines?[2J");
}

TEST_F(StackFile, AWorldWritableDirectoryWithoutTheStickyBitIsNotWrittenTo) {
  const std::string open_dir = dir_.file("open");
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  std::string error;
  EXPECT_FALSE(write_stack_file(open_dir, "ncclwatch.h.1.stack.txt", "x", &error));
  EXPECT_NE(error.find("without the sticky bit"), std::string::npos) << error;
  EXPECT_FALSE(write_stack_file(dir_.file("missing"), "ncclwatch.h.1.stack.txt", "x", &error));
}

}  // namespace
}  // namespace ncclwatch::trace

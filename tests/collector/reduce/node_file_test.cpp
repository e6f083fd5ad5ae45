// A node file (reduce/node_file.h) is written whole or not at all, and read as untrusted input:
// a cut or damaged file still gives every rank before the damage and says what is wrong; a
// foreign file, another version, a symlink or a FIFO planted under a node file's name give a
// clear problem and nothing else.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "reduce/node_file.h"
#include "reduce/node_file_writer.h"
#include "reduce/rank_codec.h"
#include "trace/trace_dir.h"

namespace ncclwatch::reduce {
namespace {
namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    std::string templ = fs::temp_directory_path().string() + "/nodefile.XXXXXX";
    if (mkdtemp(templ.data()) != nullptr) path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

NodeRank rank_of(int r) {
  NodeRank n;
  n.rank.info.rank = r;
  n.rank.info.host = "h";
  n.rank.info.source = "ncclwatch.h." + std::to_string(r) + ".trace";
  model::CallEvent c;
  c.enter_ns = 100 + r;
  c.exit_ns = 200 + r;
  n.rank.calls = {c};
  n.trace.parts = {n.rank.info.source};
  n.trace.records = 10 + static_cast<uint64_t>(r);
  return n;
}

// A node file of `ranks` ranks written in `dir`; its path.
std::string write_node_file(const std::string& dir, int ranks) {
  trace::TraceDir out;
  EXPECT_TRUE(out.open(dir)) << out.error();
  NodeFileWriter w;
  std::string error;
  const std::string name = node_file_name("h", "job");
  EXPECT_TRUE(w.begin(out, name, "job", "h", error)) << error;
  for (int r = 0; r < ranks; ++r) EXPECT_TRUE(w.add(encode_rank(rank_of(r), dir), error)) << error;
  EXPECT_TRUE(w.finish(error)) << error;
  return dir + "/" + name;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(const std::string& path, const std::string& bytes) {
  fs::remove(path);
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(NodeFile, WrittenAndReadBack) {
  TempDir d;
  const std::string path = write_node_file(d.path, 3);
  EXPECT_EQ(fs::path(path).filename(), "ncclwatch.h.job.node");
  EXPECT_TRUE(is_node_file_name("ncclwatch.h.job.node"));
  // No temporary file is left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(d.path)) entries += e.is_regular_file();
  EXPECT_EQ(entries, 1);
  const NodeFile f = read_node_file(path, d.path);
  EXPECT_EQ(f.problem, "");
  EXPECT_EQ(f.job, "job");
  EXPECT_EQ(f.host, "h");
  ASSERT_EQ(f.ranks.size(), 3u);
  EXPECT_EQ(f.ranks[2].rank.info.rank, 2);
  EXPECT_EQ(f.ranks[2].trace.records, 12u);
  EXPECT_EQ(f.ranks[2].rank.calls.at(0).enter_ns, 102);
}

TEST(NodeFile, ACutFileGivesTheRanksBeforeTheCut) {
  TempDir d;
  const std::string path = write_node_file(d.path, 3);
  const std::string whole = bytes_of(path);
  const std::size_t rank_bytes =
      (whole.size() - sizeof(NodeFileHeader) - sizeof(SectionHeader)) / 3;
  for (std::size_t cut = sizeof(NodeFileHeader); cut < whole.size(); ++cut) {
    put(path, whole.substr(0, cut));
    const NodeFile f = read_node_file(path, d.path);
    EXPECT_NE(f.problem, "") << cut;
    // Every section wholly before the cut is read.
    EXPECT_EQ(f.ranks.size(), (cut - sizeof(NodeFileHeader)) / rank_bytes) << cut;
  }
  put(path, whole.substr(0, 10));
  EXPECT_NE(read_node_file(path, d.path).problem.find("shorter than a header"), std::string::npos);
}

TEST(NodeFile, ADamagedSectionStopsTheReadThere) {
  TempDir d;
  const std::string path = write_node_file(d.path, 3);
  std::string bytes = bytes_of(path);
  const std::size_t rank_bytes =
      (bytes.size() - sizeof(NodeFileHeader) - sizeof(SectionHeader)) / 3;
  bytes[sizeof(NodeFileHeader) + rank_bytes + sizeof(SectionHeader) + 2] ^= 0x55;  // in rank 2
  put(path, bytes);
  const NodeFile f = read_node_file(path, d.path);
  EXPECT_EQ(f.ranks.size(), 1u);
  EXPECT_NE(f.problem.find("rank section 2 is damaged"), std::string::npos) << f.problem;
  const std::string one = write_node_file(d.path, 1);
  put(one, bytes_of(one) + "junk");
  EXPECT_NE(read_node_file(one, d.path).problem.find("after its end mark"), std::string::npos);
}

TEST(NodeFile, ForeignFilesAndOtherVersionsAreNotRead) {
  TempDir d;
  const std::string path = write_node_file(d.path, 1);
  std::string bytes = bytes_of(path);
  bytes[0] ^= 1;
  put(path, bytes);
  NodeFile f = read_node_file(path, d.path);
  EXPECT_EQ(f.problem, "not a node file (bad magic)");
  EXPECT_TRUE(f.ranks.empty());
  EXPECT_TRUE(f.job.empty());
  bytes[0] ^= 1;
  NodeFileHeader h{};
  std::memcpy(&h, bytes.data(), sizeof h);
  h.version = kNodeFileVersion + 1;
  std::memcpy(bytes.data(), &h, sizeof h);
  put(path, bytes);
  f = read_node_file(path, d.path);
  EXPECT_NE(f.problem.find("run `ncclwatch reduce` again"), std::string::npos) << f.problem;
  EXPECT_TRUE(f.ranks.empty());
}

TEST(NodeFile, PlantedSymlinksAndFifosAreNeverOpened) {
  TempDir d;
  const std::string target = write_node_file(d.path, 1);
  const std::string link = d.path + "/ncclwatch.other.job.node";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  NodeFile f = read_node_file(link, d.path);
  EXPECT_NE(f.problem.find("symbolic link"), std::string::npos) << f.problem;
  EXPECT_TRUE(f.ranks.empty());
  const std::string fifo = d.path + "/ncclwatch.fifo.job.node";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  f = read_node_file(fifo, d.path);  // would block forever if opened for a read
  EXPECT_NE(f.problem.find("not a regular file"), std::string::npos) << f.problem;
}

TEST(NodeFile, AWriterThatDoesNotFinishLeavesNothing) {
  TempDir d;
  {
    trace::TraceDir out;
    ASSERT_TRUE(out.open(d.path));
    NodeFileWriter w;
    std::string error;
    ASSERT_TRUE(w.begin(out, node_file_name("h", "job"), "job", "h", error));
    ASSERT_TRUE(w.add(encode_rank(rank_of(0), d.path), error));
  }
  EXPECT_TRUE(fs::is_empty(d.path));
}

// A section is a zstd frame that says its size; a frame that lies about it, or would expand
// past what a section can hold from its bytes, is refused before anything is allocated.
TEST(NodeFile, ASectionThatIsNotAnHonestFrameIsRefused) {
  const std::string raw = encode_rank(rank_of(0), "");
  const std::string packed = compress_section(raw);
  EXPECT_LT(packed.size(), raw.size());
  std::string back, error;
  ASSERT_TRUE(expand_section(packed, back, error)) << error;
  EXPECT_EQ(back, raw);
  EXPECT_FALSE(expand_section(raw, back, error));  // not a frame
  EXPECT_FALSE(expand_section(packed.substr(0, packed.size() - 1), back, error)) << "cut";
  // Ten million zero bytes compress to a few hundred: past kMaxExpansion, refused unread.
  const std::string bomb = compress_section(std::string(10'000'000, '\0'));
  EXPECT_GT(uint64_t{10'000'000} / bomb.size(), kMaxExpansion);
  EXPECT_FALSE(expand_section(bomb, back, error));
  EXPECT_NE(error.find("would expand"), std::string::npos) << error;
}

TEST(NodeFile, NamesAreSanitized) {
  EXPECT_EQ(node_file_name("a/b", "../x"), "ncclwatch.a_b..._x.node");
  EXPECT_FALSE(is_node_file_name("ncclwatch.node"));
  EXPECT_FALSE(is_node_file_name("x.h.job.node"));
}

}  // namespace
}  // namespace ncclwatch::reduce

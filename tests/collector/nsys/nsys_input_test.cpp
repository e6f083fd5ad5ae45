// Nsight Systems exports as untrusted input: any file, damaged or hostile, is one problem line
// and never a crash; the user's file is only read (no journal, lock or WAL file next to it, not
// a byte changed); the columns needed are checked by name; optional tables may be missing;
// `.nsys-rep` reports go through `nsys export` when nsys is on PATH, else one line says how.
#include <sqlite3.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "nsys/nsys_loader.h"
#include "nsys/sqlite_file.h"
#include "nsys_fixture.h"
#include "pipeline/job_input.h"
#include "process.h"

namespace ncclwatch::nsys {
namespace {

namespace fs = std::filesystem;
using testing::FixtureSpec;

std::string problems_of(const model::JobTrace& job) {
  std::string s;
  for (const auto& p : job.problems) s += p.message + "\n";
  return s;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

void sql(const fs::path& db, const char* statements) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(h, statements, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(h);
}

class NsysInput : public ::testing::Test {
 protected:
  test_support::TempDir tmp{"ncclwatch_nsys_input"};
  fs::path at(const std::string& name) const { return tmp.path() / name; }
  std::string good(const std::string& name, FixtureSpec spec = {}) {
    testing::write_nsys_export(at(name).string(), spec);
    return at(name).string();
  }
};

TEST_F(NsysInput, TheFileIsOnlyRead) {
  const std::string path = good("job.sqlite");
  const std::string before = test_support::slurp(path);
  ::chmod(path.c_str(), 0444);
  ::chmod(tmp.path().c_str(), 0555);  // not even a journal could be created here
  model::JobTrace job = load_job({path});
  ::chmod(tmp.path().c_str(), 0700);
  EXPECT_EQ(job.ranks.size(), 2u) << problems_of(job);
  EXPECT_EQ(test_support::slurp(path), before);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp.path())) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"job.sqlite"});  // no -journal, -wal, -shm
}

TEST_F(NsysInput, PathsWithUriCharactersOpen) {
  const std::string path = good("a?b#c%20d.sqlite");
  EXPECT_EQ(load_job({path}).ranks.size(), 2u);
  EXPECT_EQ(sqlite_uri("/x/a?b#c%"), "file:/x/a%3Fb%23c%25?mode=ro&immutable=1");
}

TEST_F(NsysInput, OptionalTablesMayBeMissing) {
  FixtureSpec spec;
  spec.target_info_gpu = false;
  const std::string path = good("no_gpu_info.sqlite", spec);
  sql(path, "DROP TABLE NVTX_EVENTS; DROP TABLE META_DATA_CAPTURE; DROP TABLE PROCESSES;");
  model::JobTrace job = load_job({path});
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_TRUE(job.problems.empty()) << problems_of(job);
  EXPECT_EQ(job.ranks[0].info.pci_bus_id, "");
  EXPECT_EQ(job.ranks[0].calls.size(), 24u);
}

TEST_F(NsysInput, MissingRequiredColumnsAreNamed) {
  const std::string a = good("no_device.sqlite");
  sql(a, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN deviceId TO device;");
  model::JobTrace job = load_job({a});
  EXPECT_TRUE(job.ranks.empty());
  EXPECT_NE(problems_of(job).find("CUPTI_ACTIVITY_KIND_KERNEL has no column deviceId"),
            std::string::npos)
      << problems_of(job);
  const std::string b = good("no_kernels.sqlite");
  sql(b, "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;");
  job = load_job({b});
  EXPECT_NE(problems_of(job).find("captured with --trace=cuda?"), std::string::npos);
  const std::string c = good("empty_kernels.sqlite");
  sql(c, "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL;");
  job = load_job({c});
  EXPECT_NE(problems_of(job).find("no CUDA kernels in this export"), std::string::npos);
}

TEST_F(NsysInput, HostileSchemasAndValues) {
  // A view where the kernel table should be: not read (a view can run any query).
  const std::string v = good("view.sqlite");
  sql(v,
      "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k0; CREATE VIEW "
      "CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
      "FROM r) SELECT * FROM k0, r;");
  model::JobTrace job = load_job({v});
  EXPECT_TRUE(job.ranks.empty());
  EXPECT_NE(problems_of(job).find("no CUPTI_ACTIVITY_KIND_KERNEL table"), std::string::npos);
  // Times out of range, ends before starts, a 10 MB kernel name, text where numbers belong.
  const std::string h = good("values.sqlite");
  sql(h,
      "INSERT INTO StringIds VALUES (999999, printf('%.*c', 4000000, 'x'));"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
      "globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, "
      "blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
      "localMemoryTotal, gridId) VALUES "
      "(-5, 10, 0, 1, 7, 281474976710656, 1, 1, 0,0,0,0,0,0,0,0,0,0,0,0),"
      "(9223372036854775807, 9223372036854775807, 0, 1, 7, 281474976710656, 1, 1, "
      "0,0,0,0,0,0,0,0,0,0,0,0),"
      "(200, 100, 0, 1, 7, 281474976710656, 1, 1, 0,0,0,0,0,0,0,0,0,0,0,0),"
      "('abc', 'def', 'x', 1, 'y', 'z', 1, 1, 0,0,0,0,0,0,0,0,0,0,0,0),"
      "(100000000000, 100000001000, 99999, 1, 7, 281474976710656, 1, 1, 0,0,0,0,0,0,0,0,0,0,0,0),"
      "(100000000000, 100000001000, 0, 1, 7, 281476654432256, 999999, 1, "
      "0,0,0,0,0,0,0,0,0,0,0,0);");
  job = load_job({h});
  EXPECT_EQ(job.ranks.size(), 2u);  // the good rows still read
  EXPECT_NE(problems_of(job).find("5 rows with unusable values skipped"), std::string::npos)
      << problems_of(job);
  EXPECT_NE(problems_of(job).find("reading CUPTI_ACTIVITY_KIND_KERNEL stopped"), std::string::npos)
      << "a 4 MB string is beyond the value limit: " << problems_of(job);
}

TEST_F(NsysInput, DamagedFilesAreOneLineEach) {
  const std::string path = good("job.sqlite");
  const std::string bytes = test_support::slurp(path);
  std::vector<std::string> files;
  // Cut at several points, and pages overwritten with noise (the header kept).
  for (std::size_t cut : {std::size_t{16}, std::size_t{100}, std::size_t{4096}, bytes.size() / 3,
                          bytes.size() / 2, bytes.size() - 1}) {
    files.push_back(at(fmt::format("cut{}.sqlite", cut)).string());
    write_bytes(files.back(), bytes.substr(0, cut));
  }
  std::mt19937 rng(7);
  for (int m = 0; m < 20; ++m) {
    std::string b = bytes;
    for (int k = 0; k < 50; ++k) b[100 + rng() % (b.size() - 100)] = static_cast<char>(rng());
    files.push_back(at(fmt::format("mutant{}.sqlite", m)).string());
    write_bytes(files.back(), b);
  }
  files.push_back(at("magic_only.sqlite").string());
  write_bytes(files.back(), std::string("SQLite format 3\0", 16) + std::string(5000, '\x7f'));
  for (const auto& f : files) {
    model::JobTrace job = load_job({f});  // must not crash; each either reads or says why
    if (job.ranks.empty()) {
      EXPECT_FALSE(job.problems.empty()) << f;
    }
  }
}

TEST_F(NsysInput, JobInputTellsExportsByTheirMagic) {
  const std::string a = good("rank0.db");  // any name: SQLite's magic decides
  std::string error;
  auto in = pipeline::detect_job_input({a}, error);
  ASSERT_TRUE(in.has_value()) << error;
  EXPECT_EQ(in->kind, pipeline::InputKind::kNsys);
  fs::create_directory(at("dir"));
  testing::write_nsys_export((at("dir") / "x.sqlite").string(), {});
  in = pipeline::detect_job_input({at("dir").string()}, error);
  ASSERT_TRUE(in.has_value()) << error;
  EXPECT_EQ(in->kind, pipeline::InputKind::kNsys);
  EXPECT_EQ(pipeline::load_job_input(*in, {}).ranks.size(), 2u);
  write_bytes(at("k.json"), "{\"traceEvents\": []}");
  EXPECT_FALSE(pipeline::detect_job_input({a, at("k.json").string()}, error).has_value());
  EXPECT_NE(error.find("Nsight Systems exports only"), std::string::npos) << error;
}

TEST_F(NsysInput, ReportsAreExportedWithNsysOrSaidHow) {
  const std::string rep = at("job.nsys-rep").string();
  write_bytes(rep, "not an sqlite file: nsys' own format");
  const char* old_path = std::getenv("PATH");
  const std::string saved = old_path ? old_path : "";
  // No nsys on PATH: one line with the command to run elsewhere.
  fs::create_directory(at("bin"));
  ::setenv("PATH", at("bin").c_str(), 1);
  model::JobTrace job = load_job({rep});
  EXPECT_TRUE(job.ranks.empty());
  EXPECT_NE(problems_of(job).find("nsys export --type sqlite --output " + rep + ".sqlite " + rep),
            std::string::npos)
      << problems_of(job);
  // A stand-in nsys that exports by copying a prepared file to --output.
  const std::string prepared = good("prepared.sqlite");
  write_bytes(at("bin") / "nsys",
              "#!/bin/sh\n[ \"$1\" = export ] || exit 3\nout=\nwhile [ $# -gt 0 ]; do\n"
              "  [ \"$1\" = --output ] && out=$2\n  shift\ndone\n/bin/cp '" +
                  prepared + "' \"$out\"\n");
  ::chmod((at("bin") / "nsys").c_str(), 0755);
  job = load_job({rep});
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(job.ranks.size(), 2u) << problems_of(job);
  EXPECT_EQ(job.ranks[0].info.source.find(tmp.path().string()), std::string::npos)
      << "read from the private export directory";
}

// The real export in ../shared/traces/nsys (two processes, one H100 each; no NCCL kernels):
// read where it exists, skipped elsewhere (CI has no ../shared).
TEST(NsysRealExport, TwoProcessesTwoRanksNoCommunication) {
  const std::string path = std::string(NCCLWATCH_SHARED_NSYS_TRACES) + "/h100_2gpu_1s.sqlite";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not here";
  model::JobTrace job = load_job({path});
  ASSERT_EQ(job.ranks.size(), 2u) << problems_of(job);
  EXPECT_EQ(job.ranks[0].info.pid, 111);
  EXPECT_EQ(job.ranks[1].info.pid, 112);
  std::size_t kernels = 0;
  for (const auto& r : job.ranks)
    for (const auto& k : r.kernels) kernels += k.kind == format::ActivityKind::kKernel;
  EXPECT_EQ(kernels, 3442u);
  EXPECT_EQ(job.ranks[0].info.host, "modal");
}

}  // namespace
}  // namespace ncclwatch::nsys

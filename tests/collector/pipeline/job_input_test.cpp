// pipeline/job_input: the input kind told from content (never from names alone), and one loader
// for both kinds.
#include "pipeline/job_input.h"

#include <gtest/gtest.h>

#include "synthetic_trace.h"
#include "trace_files.h"
#include "trace_fixture.h"

namespace ncclwatch::pipeline {
namespace {

using format::Func;
namespace tt = trace::testing;
namespace kt = kineto::testing;

class JobInputTest : public ::testing::Test {
 protected:
  // A closed 1-rank ncclwatch trace in `dir` (named as the shim names it).
  void ncclwatch_rank(const std::string& dir, int rank) {
    tt::write_rank(
        dir, "job", "h", 100 + rank, rank, 2,
        {tt::make_comm(0x42, 2, rank, 10), tt::make_call(Func::kAllReduce, 0x42, 1, 100, 200)});
  }
  std::string kineto_rank(const std::string& name, int rank, bool gz = false) {
    kt::SyntheticTraceSpec spec;
    spec.rank = rank;
    const std::string doc = kt::synthetic_trace(spec);
    const std::string path = dir_.file(name);
    kt::write_file(path, gz ? kt::gzip(doc) : doc);
    return path;
  }
  std::optional<JobInput> detect(const std::vector<std::string>& paths) {
    error_.clear();
    return detect_job_input(paths, error_);
  }
  tt::TempDir dir_;
  std::string error_;
};

TEST_F(JobInputTest, ADirectoryOfTraceFilesIsNcclwatchsAndLoads) {
  ncclwatch_rank(dir_.path(), 0);
  ncclwatch_rank(dir_.path(), 1);
  kineto_rank("report.json", 0);  // a JSON file next to the traces (run --json DIR/report.json)
  const auto input = detect({dir_.path()});
  ASSERT_TRUE(input) << error_;
  EXPECT_EQ(input->kind, InputKind::kNcclwatch);
  const model::JobTrace job = load_job_input(*input, {});
  EXPECT_EQ(job.ranks.size(), 2u);
}

TEST_F(JobInputTest, TheMagicDecidesNotTheName) {
  // An ncclwatch trace under a Kineto-looking name is still an ncclwatch trace.
  ncclwatch_rank(dir_.path(), 0);
  std::filesystem::rename(dir_.file("ncclwatch.h.100.trace"), dir_.file("rank0.json"));
  const auto input = detect({dir_.path()});
  ASSERT_TRUE(input) << error_;
  EXPECT_EQ(input->kind, InputKind::kNcclwatch);
  // Given alone, it is one rank's file: the report wants the directory.
  EXPECT_FALSE(detect({dir_.file("rank0.json")}));
  EXPECT_NE(error_.find("one rank's ncclwatch trace: give its directory"), std::string::npos)
      << error_;
}

TEST_F(JobInputTest, KinetoFilesAndDirectoriesPlainOrGzipLoad) {
  const std::string a = kineto_rank("a.json", 0);
  const std::string b = kineto_rank("b.data", 1, /*gz=*/true);  // gzip by its magic, any name
  const auto files = detect({a, b});
  ASSERT_TRUE(files) << error_;
  EXPECT_EQ(files->kind, InputKind::kKineto);
  EXPECT_EQ(load_job_input(*files, {}).ranks.size(), 2u);

  const auto dir = detect({dir_.path()});
  ASSERT_TRUE(dir) << error_;
  EXPECT_EQ(dir->kind, InputKind::kKineto);
  EXPECT_EQ(load_job_input(*dir, {}).ranks.size(), 1u);  // the loader reads *.json, *.json.gz
}

TEST_F(JobInputTest, UnrecognisedInputsSayWhy) {
  kt::write_file(dir_.file("notes.txt"), "rank 0 was slow\n");
  EXPECT_FALSE(detect({dir_.file("notes.txt")}));
  EXPECT_NE(error_.find("not an ncclwatch trace directory nor a Kineto trace"), std::string::npos)
      << error_;
  EXPECT_FALSE(detect({dir_.path()}));  // a directory of neither
  EXPECT_NE(error_.find("no rank traces in"), std::string::npos) << error_;
  EXPECT_FALSE(detect({dir_.file("missing")}));
  EXPECT_NE(error_.find("missing: No such file or directory"), std::string::npos) << error_;
  // The errno as it came, not "missing" for every failure (root may read anything, so a path
  // through a file stands for the paths another user may not reach).
  EXPECT_FALSE(detect({dir_.file("notes.txt") + "/x"}));
  EXPECT_NE(error_.find("notes.txt/x: Not a directory"), std::string::npos) << error_;
  EXPECT_FALSE(detect({"/dev/null"}));  // not a regular file: never read, not recognised
  EXPECT_FALSE(detect({}));
}

TEST_F(JobInputTest, BrokenTraceFilesStillGoToTheirLoader) {
  // *.trace names with no valid magic: the ncclwatch loader says what is wrong with each.
  kt::write_file(dir_.file("ncclwatch.h.1.trace"), "NOTATRACE");
  const auto input = detect({dir_.path()});
  ASSERT_TRUE(input) << error_;
  EXPECT_EQ(input->kind, InputKind::kNcclwatch);
  const model::JobTrace job = load_job_input(*input, {});
  EXPECT_TRUE(job.ranks.empty());
  EXPECT_FALSE(job.problems.empty());
}

TEST_F(JobInputTest, KindsDoNotMix) {
  const std::string traces = dir_.file("traces");
  std::filesystem::create_directories(traces);
  ncclwatch_rank(traces, 0);
  const std::string k = kineto_rank("k.json", 0);
  EXPECT_FALSE(detect({traces, k}));
  EXPECT_NE(error_.find("give one trace directory, or Kineto traces only"), std::string::npos)
      << error_;
  EXPECT_FALSE(detect({traces, traces}));  // one trace directory at a time
}

}  // namespace
}  // namespace ncclwatch::pipeline

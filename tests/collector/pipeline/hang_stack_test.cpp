// The hang verdict names where a rank that never came is in its Python code when `ncclwatch
// status --stacks` or `ncclwatch run` saved its stack next to the traces (trace/stack_file.h);
// a stack file that cannot be used is an info line saying why, and changes nothing else.
#include <unistd.h>

#include <gtest/gtest.h>

#include "pipeline/pipeline.h"
#include "process.h"
#include "report/text_renderer.h"
#include "synthetic_job.h"
#include "trace/stack_file.h"

namespace ncclwatch::pipeline {
namespace {

using format::Func;
using testing::JobBuilder;
constexpr uint64_t kComm = 0xbeef;

const char* kDataLoader = R"D(Thread 4242 (idle): "MainThread"
    wait (/usr/lib/python3.10/threading.py:324)
    get (/usr/lib/python3.10/queue.py:180)
    _try_get_data (/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py:1133)
    __next__ (/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py:631)
    train_one_epoch (/home/alice/imagenet/train.py:88)
)D";

// 4 ranks; rank 2 (host node0, pid 1002) never entered all_reduce #7 the others wait in.
JobBuilder hung_job() {
  JobBuilder b(4);
  b.job.job = "job-1";
  const std::vector<int> all = {0, 1, 2, 3};
  b.comm(kComm, all);
  b.all_reduces(kComm, all, 0, 7, 0, 1000);
  for (int r : {0, 1, 3}) b.call(r, kComm, 7, Func::kAllReduce, 1024, 6'000'000, 0);
  return b;
}

std::string save(const std::string& dir, const std::string& job, int64_t pid = 1002) {
  trace::StackFileHeader h;
  h.job = job;
  h.rank = 2;
  h.host = "node0";
  h.pid = pid;
  h.taken = "2026-12-04T15:00:00Z";
  h.why = "never entered all_reduce #7";
  const std::string name = trace::stack_file_name("node0", pid);
  std::string error;
  EXPECT_TRUE(trace::write_stack_file(dir, name, trace::render_stack_file(h, kDataLoader), &error))
      << error;
  return dir + "/" + name;
}

PipelineResult report(JobBuilder& b, const std::string& stack_dir) {
  PipelineOptions o;
  o.analyses = false;
  o.stack_dir = stack_dir;
  return run_pipeline(b.job, o);
}

const nlohmann::json& missing_entry(const PipelineResult& r) {
  return r.report.json["hang"]["last_call_of_missing"][0];
}

TEST(HangStack, TheVerdictNamesTheStuckRanksPythonFunction) {
  test_support::TempDir tmp("ncclwatch_hang_stack");
  save(tmp.path().string(), "job-1");
  JobBuilder b = hung_job();
  const PipelineResult r = report(b, tmp.path().string());
  const std::string text = report::render_text(r.report);
  EXPECT_EQ(text.rfind("CRITICAL [hang] job hung in all_reduce #7", 0), 0u) << text;
  const std::string said =
      "; rank 2 stuck in torch/utils/data/dataloader.py:__next__, called from train.py:88 "
      "(train_one_epoch) (py-spy at 2026-12-04T15:00:00Z)";
  EXPECT_NE(text.substr(0, text.find('\n')).find(said), std::string::npos) << text;
  EXPECT_NE(r.report.json["hang"]["text"].get<std::string>().find(said), std::string::npos);
  const nlohmann::json& py = missing_entry(r)["python"];
  ASSERT_TRUE(py.is_object()) << missing_entry(r).dump();
  EXPECT_EQ(py["where"], "torch/utils/data/dataloader.py:__next__");
  EXPECT_EQ(py["line"], 631);
  EXPECT_EQ(py["caller"], "train.py:88 (train_one_epoch)");
  EXPECT_EQ(py["innermost"], "torch/utils/data/dataloader.py:_try_get_data");
  EXPECT_EQ(py["thread"], "MainThread");
  EXPECT_EQ(py["file"], "ncclwatch.node0.1002.stack.txt");
}

TEST(HangStack, WithoutAStackNothingChanges) {
  test_support::TempDir tmp("ncclwatch_hang_stack");
  JobBuilder a = hung_job(), b = hung_job();
  const PipelineResult without = report(a, "");
  const PipelineResult empty_dir = report(b, tmp.path().string());
  EXPECT_EQ(report::render_text(without.report), report::render_text(empty_dir.report));
  EXPECT_TRUE(missing_entry(without)["python"].is_null());
}

TEST(HangStack, AStackFileThatCannotBeUsedIsANote) {
  test_support::TempDir tmp("ncclwatch_hang_stack");
  const std::string dir = tmp.path().string();
  // Another job's stack of a process with the same host and pid (a reused trace directory).
  save(dir, "job-0");
  JobBuilder b = hung_job();
  PipelineResult r = report(b, dir);
  std::string text = report::render_text(r.report);
  EXPECT_EQ(text.find("stuck in torch"), std::string::npos) << text;
  EXPECT_NE(text.find("info     [hang] rank 2: saved Python stack not used: "
                      "ncclwatch.node0.1002.stack.txt: written for job job-0, not job-1"),
            std::string::npos)
      << text;
  EXPECT_TRUE(missing_entry(r)["python"].is_null());
  // A symlink planted under the name.
  const std::string real = save(dir, "job-1", 77);
  const std::string name = dir + "/" + trace::stack_file_name("node0", 1002);
  ASSERT_EQ(::unlink(name.c_str()), 0);
  ASSERT_EQ(::symlink(real.c_str(), name.c_str()), 0);
  JobBuilder c = hung_job();
  r = report(c, dir);
  text = report::render_text(r.report);
  EXPECT_NE(text.find("a symlink, not followed"), std::string::npos) << text;
  EXPECT_TRUE(missing_entry(r)["python"].is_null());
}

}  // namespace
}  // namespace ncclwatch::pipeline

#include "report/json_renderer.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "pipeline/pipeline.h"
#include "synthetic_job.h"

namespace ncclwatch::report {

TEST(JsonRenderer, SchemaFieldsOfTheCollector) {
  testing::JobBuilder b(2);
  b.comm(0x1, {0, 1});
  b.all_reduces(0x1, {0, 1}, 0, 3, 0, 1000);
  b.call(0, 0x1, 3, format::Func::kAllReduce, 1024, 10'000, 0);
  pipeline::PipelineOptions o;
  o.analyses = false;
  model::Report r = pipeline::build_report(b.job, o);
  nlohmann::json j = render_json(r);
  EXPECT_EQ(j["schema_version"], 1);
  for (const char* k : {"rank", "host", "pid", "calls", "dropped"})
    EXPECT_TRUE(j["ranks"][0].contains(k)) << k;
  for (const char* k : {"id", "nranks", "ranks"}) EXPECT_TRUE(j["comms"][0].contains(k)) << k;
  for (const char* k : {"comm", "seq", "op", "missing_ranks"})
    EXPECT_TRUE(j["incomplete"][0].contains(k)) << k;
  for (const char* k : {"offsets", "residual_us"}) EXPECT_TRUE(j["clock"].contains(k)) << k;
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0]["severity"], "critical");
  EXPECT_EQ(j["findings"][0]["source"], "hang");  // the hang verdict comes first
  EXPECT_EQ(j["hang"]["seq"], j["incomplete"][0]["seq"]);
  EXPECT_EQ(j["findings"][1]["source"], "collector");
}

TEST(JsonRenderer, WritesAFileAndReportsFailure) {
  model::Report r;
  r.json["host"] = std::string("bad\xff utf8");
  std::string path = ::testing::TempDir() + "/ncclwatch_report_test.json";
  std::string error;
  ASSERT_TRUE(write_json(r, path, error)) << error;
  std::ifstream in(path);
  nlohmann::json back = nlohmann::json::parse(in);
  EXPECT_TRUE(back["findings"].is_array());
  std::remove(path.c_str());
  EXPECT_FALSE(write_json(r, "/nonexistent-dir/x.json", error));
  EXPECT_NE(error.find("cannot write /nonexistent-dir/x.json"), std::string::npos);
}

}  // namespace ncclwatch::report

// One event's fields, and timestamps converted to ns without losing precision.
#include "kineto/trace_event.h"

#include <gtest/gtest.h>

#include <string>

namespace ncclwatch::kineto {
namespace {

TEST(ParseUsToNs, ExactForEpochSizedAndFractionalValues) {
  int64_t ns = 0;
  ASSERT_TRUE(parse_us_to_ns("1682725898236567", ns));
  EXPECT_EQ(ns, 1682725898236567000);  // a double would land on a multiple of 256 ns here
  ASSERT_TRUE(parse_us_to_ns("4458676522690.655", ns));
  EXPECT_EQ(ns, 4458676522690655);
  ASSERT_TRUE(parse_us_to_ns("68.0", ns));
  EXPECT_EQ(ns, 68000);
  ASSERT_TRUE(parse_us_to_ns("1.2", ns));
  EXPECT_EQ(ns, 1200);
  ASSERT_TRUE(parse_us_to_ns("0.0004", ns));  // rounds to nearest ns
  EXPECT_EQ(ns, 0);
  ASSERT_TRUE(parse_us_to_ns("0.0005", ns));
  EXPECT_EQ(ns, 1);
  ASSERT_TRUE(parse_us_to_ns("\"12\"", ns));  // a string holding a number
  EXPECT_EQ(ns, 12000);
  ASSERT_TRUE(parse_us_to_ns("-3", ns));
  EXPECT_EQ(ns, -3000);
  ASSERT_TRUE(parse_us_to_ns("1.5e3", ns));
  EXPECT_EQ(ns, 1500000);
  ASSERT_TRUE(parse_us_to_ns(".5", ns));
  EXPECT_EQ(ns, 500);
  EXPECT_FALSE(parse_us_to_ns("", ns));
  EXPECT_FALSE(parse_us_to_ns("abc", ns));
  EXPECT_FALSE(parse_us_to_ns("12x", ns));
  EXPECT_FALSE(parse_us_to_ns("-", ns));
  EXPECT_FALSE(parse_us_to_ns("99999999999999999999999", ns));  // beyond int64 ns
  EXPECT_FALSE(parse_us_to_ns("1e300", ns));
}

bool parse(const std::string& json, TraceEvent& e) {
  std::string padded = json;
  padded.append(simdjson::SIMDJSON_PADDING, ' ');
  static TraceEventParser parser;
  return parser.parse(std::string_view(padded.data(), json.size()), e);
}

TEST(TraceEventParser, ReadsTheFieldsTheReaderUses) {
  TraceEvent e;
  ASSERT_TRUE(
      parse(R"({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 40,
    "ts": 4458677009853.422, "dur": 2636.669, "args": {"External id": 12945, "queued": 0, "device": 3,
    "stream": 40, "correlation": 60047, "grid": [8, 1, 1], "bytes": 16}})",
            e));
  EXPECT_EQ(e.ph, "X");
  EXPECT_EQ(e.cat, "kernel");
  EXPECT_EQ(e.name, "ncclKernel_AllReduce");
  EXPECT_EQ(e.ts_ns, 4458677009853422);
  EXPECT_EQ(e.dur_ns, 2636669);
  EXPECT_EQ(e.tid, 40);
  EXPECT_EQ(e.external_id, 12945);
  EXPECT_EQ(e.correlation, 60047);
  EXPECT_EQ(e.device, 3);
  EXPECT_EQ(e.stream, 40);
  EXPECT_EQ(e.bytes, 16);
}

TEST(TraceEventParser, ReadsRecordParamCommsArgsInAnyOrder) {
  TraceEvent e;
  ASSERT_TRUE(parse(R"({"args": {"Seq": 7, "Process Group Ranks": [0, 2, 4], "dtype": "BFloat16",
    "Collective name": "all_gather_into_tensor", "In msg nelems": 10, "Out msg nelems": 30,
    "Group size": 3, "Process Group Name": "1", "Process Group Description": "tp", "Rank": 2},
    "name": "record_param_comms", "ts": "5", "pid": "Spans", "tid": "PyTorch Profiler"})",
                    e));
  EXPECT_EQ(e.name, "record_param_comms");
  EXPECT_EQ(e.ts_ns, 5000);
  EXPECT_EQ(e.pid, -1);  // strings are not numbers
  EXPECT_EQ(e.seq, 7);
  EXPECT_EQ(e.pg_ranks, "[0,2,4]");
  EXPECT_EQ(e.dtype, "BFloat16");
  EXPECT_EQ(e.collective, "all_gather_into_tensor");
  EXPECT_EQ(e.in_nelems, 10);
  EXPECT_EQ(e.out_nelems, 30);
  EXPECT_EQ(e.group_size, 3);
  EXPECT_EQ(e.pg_name, "1");
  EXPECT_EQ(e.pg_desc, "tp");
  EXPECT_EQ(e.rank, 2);
}

TEST(TraceEventParser, RejectsBrokenJsonAndIgnoresWrongTypes) {
  TraceEvent e;
  EXPECT_FALSE(parse(R"({"ph": "X", "ts": })", e));
  EXPECT_FALSE(parse(R"({"ph" "X"})", e));
  EXPECT_FALSE(parse(R"([1, 2])", e));
  ASSERT_TRUE(parse(R"({"ph": 5, "ts": [1], "args": "none", "tid": {"a": 1}})", e));
  EXPECT_EQ(e.ph, "");
  EXPECT_FALSE(e.has_ts);
  EXPECT_EQ(e.tid, -1);
}

}  // namespace
}  // namespace ncclwatch::kineto

// One Chrome-trace event as the Kineto reader needs it: the fields it uses, parsed out of the
// event's JSON with simdjson's on-demand parser. Strings are views valid until the next parse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <simdjson.h>

namespace ncclwatch::kineto {

// What an event's "cat" says, told case-insensitively and with PyTorch 1.8-1.9's names mapped
// to today's: Kernel -> kernel, Memcpy -> gpu_memcpy, Memset -> gpu_memset, Runtime ->
// cuda_runtime, Operator -> cpu_op.
enum class Category : uint8_t {
  kOther = 0,
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,  // cuda_runtime / Runtime
  kDriver,   // cuda_driver
  kCpuOp,    // cpu_op / Operator
  kUserAnnotation,
  kGpuUserAnnotation,
};
Category category_of(std::string_view cat);

struct TraceEvent {
  std::string_view ph;
  std::string_view cat;
  Category category = Category::kOther;
  std::string_view name;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  bool has_ts = false;
  // A "ts" / "dur" key whose value is no finite number in range (NaN, Infinity, garbage, beyond
  // int64 ns): an input problem, never silently a zero or a dropped event.
  bool bad_ts = false;
  bool bad_dur = false;
  int64_t pid = -1;  // -1 when not a number (Kineto writes "Spans", "Traces", ...)
  int64_t tid = -1;  // a number, or the N of "stream N" (GPU tracks in PyTorch 1.8-1.9)
  // args (only the keys the reader uses; -1 / empty when absent)
  int64_t external_id = -1;  // "External id" ("external id" before PyTorch 1.10)
  int64_t correlation = -1;
  int64_t device = -1;
  int64_t stream = -1;
  int64_t bytes = -1;
  int64_t in_nelems = -1;
  int64_t out_nelems = -1;
  int64_t group_size = -1;
  int64_t seq = -1;
  int64_t rank = -1;
  std::string_view collective;  // "Collective name"
  std::string_view dtype;
  std::string_view pg_name;   // "Process Group Name"
  std::string_view pg_desc;   // "Process Group Description"
  std::string_view pg_ranks;  // "Process Group Ranks": "[0, 1]" (a string, or raw JSON array)
};

// Parses Chrome-trace timestamps (µs, integer or decimal, as number or string) into ns exactly:
// going through double would lose precision at epoch-sized µs values (1.7e18 ns).
bool parse_us_to_ns(std::string_view token, int64_t& ns);

class TraceEventParser {
 public:
  // `json` must be followed by simdjson::SIMDJSON_PADDING readable bytes. On failure returns
  // false and error() names simdjson's error.
  bool parse(std::string_view json, TraceEvent& out);
  const char* error() const { return error_; }

 private:
  bool parse_args(simdjson::ondemand::value args, TraceEvent& out);
  simdjson::ondemand::parser parser_;
  std::string ranks_storage_;
  const char* error_ = "";
};

}  // namespace ncclwatch::kineto

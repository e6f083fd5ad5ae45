// The drain thread's batch (record/recorder_instance.h): a worst-case batch -- every record an
// InFlightRecord whose call's return was drained and held just before it, so each keeps two
// records -- fits in what was reserved at start, so draining it never allocates.
#include "record/recorder_instance.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "process.h"
#include "record_builder.h"

namespace ncclwatch::shim {
namespace {

// The records of a closed trace file.
std::vector<format::Record> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<format::Record> out;
  if (data.size() < sizeof(format::TraceHeader)) return out;
  out.resize((data.size() - sizeof(format::TraceHeader)) / sizeof(format::Record));
  if (!out.empty())
    std::memcpy(out.data(), data.data() + sizeof(format::TraceHeader),
                out.size() * sizeof(format::Record));
  return out;
}

TEST(RecorderInstance, AWorstCaseBatchFitsWhatWasReserved) {
  const test_support::TempDir dir("ncclwatch_instance");
  Settings s;
  s.dir = dir.path().string();
  s.job = "instance-test-" + std::to_string(getpid());
  s.host = "h";
  s.ring_mb = 1;
  s.detail = DetailLevel::kWindows;  // no window open: calls are left out and held
  s.test_drain_hold = true;          // drained by finish() alone, exactly what is pushed here
  std::string error;
  std::unique_ptr<RecorderInstance> r = RecorderInstance::create(s, &error);
  ASSERT_TRUE(r) << error;
  const std::size_t reserved = r->kept_capacity();
  // 1024 calls that returned (held), then an InFlightRecord for each: whatever records come
  // before them, 1024 in a row hold a whole batch of them.
  constexpr uint32_t kCalls = 1024;
  for (uint32_t i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(r->ring().push(test_support::call_record({.tid = 100 + i,
                                                          .func = format::Func::kAllReduce,
                                                          .enter_ns = 1'000'000 + i,
                                                          .exit_ns = 2'000'000 + i})));
  }
  for (uint32_t i = 0; i < kCalls; ++i) {
    format::Record f{};
    f.prefix.kind = format::RecordKind::kInFlight;
    f.prefix.u8a = static_cast<uint8_t>(format::Func::kAllReduce);
    f.prefix.tid = 100 + i;
    f.in_flight.t_seen_ns = 1'500'000 + i;
    f.in_flight.entry.t_enter_ns = 1'000'000 + i;
    ASSERT_TRUE(r->ring().push(f));
  }
  const std::string path = r->trace_path();
  r->finish();
  EXPECT_EQ(r->kept_capacity(), reserved);
  // Every return was kept beside its InFlightRecord (the batches were the worst case).
  uint32_t calls = 0, in_flight = 0;
  for (const format::Record& rec : read_records(path)) {
    calls += rec.prefix.kind == format::RecordKind::kCall;
    in_flight += rec.prefix.kind == format::RecordKind::kInFlight;
  }
  EXPECT_EQ(calls, kCalls);
  EXPECT_EQ(in_flight, kCalls);
}

}  // namespace
}  // namespace ncclwatch::shim

// Unit tests of the GPU part's pure pieces: name interning, the kernel filter, the buffer pool,
// the CUPTI-record conversion (real CUpti_Activity layouts built by hand) and the clock.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "activity_converter.h"
#include "buffer_pool.h"
#include "clock_converter.h"
#include "kernel_filter.h"
#include "memory_recorder.h"
#include "string_table.h"

namespace ncclwatch::shim::gpu {
namespace {

std::vector<format::Record> sunk;
bool sink(const format::Record& r) noexcept {
  sunk.push_back(r);
  return true;
}

std::string text_of(uint32_t id) {
  std::string s;
  for (const auto& r : sunk) {
    if (r.prefix.kind == format::RecordKind::kString && r.string.prefix.tid == id) {
      s.append(r.string.text, strnlen(r.string.text, format::kStringChunkBytes));
    }
  }
  return s;
}

TEST(StringTable, InternsOncePerContentAndChunksLongNames) {
  sunk.clear();
  StringTable t(&sink);
  std::string a = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  std::string b = a;  // same content, other pointer
  uint32_t ia = t.intern(a.c_str());
  EXPECT_EQ(ia, t.intern(b.c_str()));
  EXPECT_EQ(ia, t.intern_stable(a.c_str()));
  EXPECT_EQ(ia, t.intern_stable(a.c_str()));
  EXPECT_EQ(sunk.size(), 1u);
  std::string long_name(150, 'k');
  uint32_t il = t.intern(long_name.c_str());
  EXPECT_NE(il, ia);
  EXPECT_EQ(sunk.size(), 1u + 3u);  // 150 bytes = 3 chunks of 56
  EXPECT_EQ(text_of(il), long_name);
  EXPECT_TRUE(sunk.back().string.prefix.flags & format::kStringLastChunk);
  EXPECT_EQ(t.intern(nullptr), 0u);
  EXPECT_EQ(t.intern(""), 0u);
}

TEST(StringTable, FullTableRefersToZeroAndCounts) {
  sunk.clear();
  StringTable t(&sink);
  char name[32];
  for (std::size_t i = 0; i < StringTable::kCapacity; ++i) {
    std::snprintf(name, sizeof name, "k%zu", i);
    ASSERT_NE(t.intern(name), 0u);
  }
  EXPECT_EQ(t.intern("one_too_many"), 0u);
  EXPECT_EQ(t.overflowed(), 1u);
  EXPECT_NE(t.intern("k7"), 0u);  // known names still resolve
}

// Parsing NCCLWATCH_KERNELS: tests/shim/record/settings_test.cpp.
TEST(KernelFilter, SamplesComputeWindowsAndNeverDropsNccl) {
  EXPECT_EQ(KernelFilter().policy(), KernelFilter::Policy::kAll);
  KernelFilter s(KernelFilter::Policy::kSampled, 4);
  EXPECT_EQ(s.policy(), KernelFilter::Policy::kSampled);
  EXPECT_EQ(s.every(), 4u);
  EXPECT_TRUE(s.keep(false, 0));
  EXPECT_FALSE(s.keep(false, KernelFilter::kWindowNs));
  EXPECT_TRUE(s.keep(true, KernelFilter::kWindowNs));
  EXPECT_TRUE(s.keep(false, 4 * KernelFilter::kWindowNs + 5));
  EXPECT_EQ(KernelFilter(KernelFilter::Policy::kSampled, 1).policy(), KernelFilter::Policy::kAll);
  KernelFilter nccl(KernelFilter::Policy::kNccl);
  EXPECT_FALSE(nccl.keep(false, 0));
  EXPECT_TRUE(nccl.keep(true, 0));
}

TEST(KernelFilter, RecognisesNcclKernelNames) {
  EXPECT_TRUE(is_nccl_kernel_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  EXPECT_TRUE(is_nccl_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float"));
  EXPECT_TRUE(is_nccl_kernel_name("_Z28ncclDevKernel_Generic_4P11ncclDevComm"));
  EXPECT_TRUE(is_nccl_kernel_name("ncclSymkDevKernel_AllReduce"));
  EXPECT_FALSE(is_nccl_kernel_name("void at::native::vectorized_elementwise_kernel"));
  EXPECT_FALSE(is_nccl_kernel_name(nullptr));
}

TEST(BufferPool, HandsOutEachBufferOnceAndTakesThemBack) {
  BufferPool pool(3, 1000);
  EXPECT_EQ(pool.buffer_bytes(), 1000u);
  uint8_t* a = pool.acquire();
  uint8_t* b = pool.acquire();
  uint8_t* c = pool.acquire();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.in_use(), 3u);
  pool.release(b);
  EXPECT_EQ(pool.acquire(), b);
  uint8_t outside = 0;
  pool.release(&outside);  // not ours: ignored
  EXPECT_EQ(pool.in_use(), 3u);
}

// An NVTX marker activity record as CUPTI delivers it.
CUpti_ActivityMarker2 marker(uint32_t flags, uint32_t id, uint64_t timestamp,
                             const char* name = nullptr) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = static_cast<CUpti_ActivityFlag>(flags);
  m.id = id;
  m.timestamp = timestamp;
  m.name = name;
  return m;
}

TEST(ActivityConverter, KernelMemcpyApiAndMarkersBecomeRecords) {
  sunk.clear();
  ClockConverter clock;
  clock.use_host_clock();
  ActivityConverter conv(&sink, clock, KernelFilter{});
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1000;
  k.end = 5000;
  k.deviceId = 3;
  k.streamId = 17;
  k.correlationId = 42;
  k.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  conv.convert(reinterpret_cast<CUpti_Activity*>(&k));
  const format::Record& kr = sunk.back();
  ASSERT_EQ(kr.prefix.kind, format::RecordKind::kKernel);
  EXPECT_EQ(kr.kernel.start_ns, 1000);
  EXPECT_EQ(kr.kernel.end_ns, 5000);
  EXPECT_EQ(kr.kernel.correlation, 42u);
  EXPECT_EQ(kr.prefix.u8b, 3);
  EXPECT_EQ(kr.prefix.tid, 17u);
  EXPECT_TRUE(kr.prefix.flags & format::kKernelIsNccl);
  EXPECT_EQ(text_of(kr.kernel.name_id), k.name);

  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.start = 10;
  m.end = 20;
  m.bytes = 4096;
  m.graphId = 9;
  conv.convert(reinterpret_cast<CUpti_Activity*>(&m));
  EXPECT_EQ(sunk.back().prefix.u8a, static_cast<uint8_t>(format::ActivityKind::kMemcpy));
  EXPECT_EQ(sunk.back().kernel.bytes, 4096u);
  EXPECT_TRUE(sunk.back().prefix.flags & format::kKernelFromGraph);

  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch;
  a.start = 100;
  a.end = 150;
  a.correlationId = 43;
  a.threadId = 77;
  conv.convert(reinterpret_cast<CUpti_Activity*>(&a));
  EXPECT_EQ(sunk.back().prefix.kind, format::RecordKind::kLaunch);
  EXPECT_EQ(sunk.back().prefix.u8a, static_cast<uint8_t>(format::LaunchApi::kDriverGraph));
  EXPECT_EQ(sunk.back().launch.correlation, 43u);

  CUpti_ActivityMarker2 start = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 5, 200, "step");
  start.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  start.objectId.pt.threadId = 99;
  CUpti_ActivityMarker2 end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 5, 900);
  conv.convert(reinterpret_cast<CUpti_Activity*>(&start));
  conv.convert(reinterpret_cast<CUpti_Activity*>(&end));
  ASSERT_EQ(sunk.back().prefix.kind, format::RecordKind::kNvtx);
  EXPECT_EQ(sunk.back().nvtx.start_ns, 200);
  EXPECT_EQ(sunk.back().nvtx.end_ns, 900);
  EXPECT_EQ(sunk.back().prefix.tid, 99u);
  EXPECT_EQ(text_of(sunk.back().nvtx.name_id), "step");
}

// A range open when tracing began ends without a start: nothing of it was recorded, so nothing
// is lost (a real run's first NVTX range did so and made a healthy report warn of a loss). A
// start overwritten by 1024 newer open ranges is lost and counted once, not again at its end.
TEST(ActivityConverter, RangeEndWithoutItsStartIsNoLoss) {
  sunk.clear();
  ClockConverter clock;
  clock.use_host_clock();
  ActivityConverter conv(&sink, clock, KernelFilter{});
  CUpti_ActivityMarker2 end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 7, 900);
  conv.convert(reinterpret_cast<CUpti_Activity*>(&end));
  EXPECT_TRUE(sunk.empty());
  EXPECT_EQ(conv.stats().unknown, 0u);
  EXPECT_EQ(conv.stats().unmatched_ends, 1u);

  CUpti_ActivityMarker2 start = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 0, 0, "r");
  for (uint32_t id : {1u, 1u + 1024u}) {  // the same slot: the first start is lost
    start.id = id;
    conv.convert(reinterpret_cast<CUpti_Activity*>(&start));
  }
  end.id = 1;
  conv.convert(reinterpret_cast<CUpti_Activity*>(&end));
  EXPECT_EQ(conv.stats().unknown, 1u);
  EXPECT_EQ(conv.stats().unmatched_ends, 2u);
  end.id = 1 + 1024;
  conv.convert(reinterpret_cast<CUpti_Activity*>(&end));
  int ranges = 0;
  for (const auto& r : sunk) ranges += r.prefix.kind == format::RecordKind::kNvtx;
  EXPECT_EQ(ranges, 1);  // the surviving range only
  EXPECT_EQ(sunk.back().prefix.kind, format::RecordKind::kNvtx);
}

TEST(ActivityConverter, ZeroTimestampsAreDroppedAndCounted) {
  sunk.clear();
  ClockConverter clock;
  ActivityConverter conv(&sink, clock, KernelFilter{});
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "gemm";
  conv.convert(reinterpret_cast<CUpti_Activity*>(&k));
  EXPECT_TRUE(sunk.empty());
  EXPECT_EQ(conv.stats().zero_timestamps, 1u);
}

TEST(ActivityConverter, FilterKeepsNcclDropsCompute) {
  sunk.clear();
  ClockConverter clock;
  ActivityConverter conv(&sink, clock, KernelFilter(KernelFilter::Policy::kNccl));
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1;
  k.end = 2;
  k.name = "gemm";
  conv.convert(reinterpret_cast<CUpti_Activity*>(&k));
  k.name = "ncclDevKernel_AllGather_RING_LL";
  conv.convert(reinterpret_cast<CUpti_Activity*>(&k));
  EXPECT_EQ(conv.stats().filtered, 1u);
  ASSERT_FALSE(sunk.empty());
  EXPECT_TRUE(sunk.back().prefix.flags & format::kKernelIsNccl);
}

int fake_cupti_clock(uint64_t* ts) {
  *ts = static_cast<uint64_t>(now_ns()) + 5'000'000'000ull;  // CUPTI clock 5 s ahead
  return 0;
}

TEST(ClockConverter, MeasuredOffsetMapsCuptiClockToHost) {
  ClockConverter c;
  EXPECT_EQ(c.to_host(1234), 1234);
  c.use_measured(&fake_cupti_clock);
  EXPECT_TRUE(c.measured());
  EXPECT_NEAR(static_cast<double>(c.offset_ns()), 5e9, 1e5);
  int64_t host = now_ns();
  EXPECT_NEAR(static_cast<double>(c.to_host(static_cast<uint64_t>(host) + 5'000'000'000ull)),
              static_cast<double>(host), 1e5);
}

}  // namespace
}  // namespace ncclwatch::shim::gpu

#include "synthetic_trace_writer.h"

#include <cstdio>

#include "ncclwatch/format.h"
#include "record_builder.h"
#include "trace_file_writer.h"

namespace ncclwatch::bench {

namespace {

namespace ts = test_support;

constexpr uint64_t kComm = 0x5eed5eed12345678ULL;
constexpr uint32_t kTid = 4242;
constexpr uint32_t kClockWindowNs = 4242;  // how long reading the two clocks took

}  // namespace

uint64_t write_synthetic_job(const SyntheticJob& spec) {
  uint64_t bytes = 0;
  for (int rank = 0; rank < spec.ranks; ++rank) {
    const int host = rank / spec.ranks_per_host;
    // Each host's monotonic clock starts elsewhere; NTP-synced wall clocks agree.
    const int64_t clock_shift = int64_t{host} * 7'000'000'000;
    const int64_t wall = 1'700'000'000'000'000'000;
    format::TraceHeader h = format::trace_header(format::kTraceStateClosed, {});
    h.mode = spec.mix == "host" ? 0 : 1;
    std::snprintf(h.process.job, sizeof h.process.job, "%s", spec.job.c_str());
    std::snprintf(h.process.host, sizeof h.process.host, "node%03d", host);
    h.process.pid = 10000 + rank;
    h.process.rank = rank;
    h.process.world_size = spec.ranks;
    h.process.local_rank = rank % spec.ranks_per_host;
    h.process.device = rank % spec.ranks_per_host;
    h.process.start_monotonic_ns = 1'000'000'000 + clock_shift;
    h.process.start_realtime_ns = wall;
    std::string path = spec.dir + "/ncclwatch.node" + std::to_string(host) + "." +
                       std::to_string(10000 + rank) + ".trace";
    TraceFileWriter w(path, h);

    w.put(ts::identity_record({.tid = kTid,
                               .rank = rank,
                               .world = spec.ranks,
                               .local_rank = rank % spec.ranks_per_host,
                               .device = rank % spec.ranks_per_host}));
    w.put(ts::comm_record({.tid = kTid,
                           .created_by = format::Func::kCommInitRank,
                           .enter_ns = 1'000'000'000 + clock_shift,
                           .exit_ns = 1'000'000'000 + clock_shift + 1000,
                           .comm = kComm,
                           .nranks = spec.ranks,
                           .rank = rank,
                           .device = rank % spec.ranks_per_host}));
    put_string(w, 1, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
    put_string(w, 2, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n");

    const bool full = spec.mix != "host";
    uint32_t corr = 1;
    for (uint64_t seq = 0; w.count() < spec.records_per_rank; ++seq) {
      // The same collective ends at the same true instant everywhere: 1 ms per step.
      const int64_t t = 2'000'000'000 + clock_shift + static_cast<int64_t>(seq) * 1'000'000;
      if (seq % 4096 == 0) w.put(ts::clock_record(t, t - clock_shift + wall, kClockWindowNs));
      if (full) {
        for (int k = 0; k < 2; ++k) {  // compute before the collective
          w.put(ts::launch_record({.tid = kTid,
                                   .enter_ns = t + 10'000 * k,
                                   .exit_ns = t + 10'000 * k + 3000,
                                   .stream = 0x7000,
                                   .correlation = corr}));
          w.put(ts::kernel_record({.stream_id = 7,
                                   .start_ns = t + 20'000 + 300'000 * k,
                                   .end_ns = t + 20'000 + 300'000 * k + 280'000,
                                   .correlation = corr++,
                                   .name_id = 2}));
        }
      }
      const int64_t enter = t + 600'000 + (rank * 37 % 101) * 1000;
      w.put(ts::call_record({.tid = kTid,
                             .func = format::Func::kAllReduce,
                             .enter_ns = enter,
                             .exit_ns = full ? enter + 5000 : t + 800'000,
                             .comm = kComm,
                             .count = 1 << 20,
                             .stream = 0x8000,
                             .seq = static_cast<uint32_t>(seq),
                             .peer = -1,
                             .datatype = 9}));
      if (full) {
        w.put(ts::launch_record({.tid = kTid,
                                 .enter_ns = enter + 1000,
                                 .exit_ns = enter + 3000,
                                 .stream = 0x8000,
                                 .correlation = corr}));
        w.put(ts::link_record({.tid = kTid,
                               .func = format::Func::kAllReduce,
                               .t_ns = enter + 1500,
                               .comm = kComm,
                               .stream = 0x8000,
                               .correlation = corr,
                               .seq = static_cast<uint32_t>(seq)}));
        w.put(ts::kernel_record({.stream_id = 8,
                                 .nccl = true,
                                 .start_ns = enter + 4000,
                                 .end_ns = t + 900'000,  // ends together on every rank
                                 .correlation = corr++,
                                 .name_id = 1}));
      }
    }
    bytes += w.finish();
  }
  return bytes;
}

}  // namespace ncclwatch::bench

#include "synthetic_trace_writer.h"

#include <cstdio>

#include "ncclwatch/format.h"
#include "trace_file_writer.h"

namespace ncclwatch::bench {

namespace {

using format::Record;
using format::RecordKind;

constexpr uint64_t kComm = 0x5eed5eed12345678ULL;

Record blank(RecordKind kind) {
  return blank_record(kind, 4242);
}

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

    Record id = blank(RecordKind::kIdentity);
    id.identity.rank = rank;
    id.identity.world_size = spec.ranks;
    id.identity.local_rank = rank % spec.ranks_per_host;
    id.identity.device = rank % spec.ranks_per_host;
    w.put(id);
    Record comm = blank(RecordKind::kComm);
    comm.prefix.u8a = static_cast<uint8_t>(format::Func::kCommInitRank);
    comm.comm.t_enter_ns = 1'000'000'000 + clock_shift;
    comm.comm.t_exit_ns = comm.comm.t_enter_ns + 1000;
    comm.comm.comm_id = kComm;
    comm.comm.nranks = spec.ranks;
    comm.comm.rank = rank;
    comm.comm.device = rank % spec.ranks_per_host;
    w.put(comm);
    put_string(w, 1, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
    put_string(w, 2, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n");

    const bool full = spec.mix != "host";
    uint32_t corr = 1;
    for (uint64_t seq = 0; w.count() < spec.records_per_rank; ++seq) {
      // The same collective ends at the same true instant everywhere: 1 ms per step.
      const int64_t t = 2'000'000'000 + clock_shift + static_cast<int64_t>(seq) * 1'000'000;
      if (seq % 4096 == 0) {
        Record c = blank(RecordKind::kClock);
        c.clock.monotonic_ns = t;
        c.clock.realtime_ns = t - clock_shift + wall;
        w.put(c);
      }
      if (full) {
        for (int k = 0; k < 2; ++k) {  // compute before the collective
          Record l = blank(RecordKind::kLaunch);
          l.launch.t_enter_ns = t + 10'000 * k;
          l.launch.t_exit_ns = l.launch.t_enter_ns + 3000;
          l.launch.stream = 0x7000;
          l.launch.correlation = corr;
          w.put(l);
          Record kr = blank(RecordKind::kKernel);
          kr.prefix.tid = 7;
          kr.kernel.start_ns = t + 20'000 + 300'000 * k;
          kr.kernel.end_ns = kr.kernel.start_ns + 280'000;
          kr.kernel.correlation = corr++;
          kr.kernel.name_id = 2;
          w.put(kr);
        }
      }
      const int64_t enter = t + 600'000 + (rank * 37 % 101) * 1000;
      Record call = blank(RecordKind::kCall);
      call.prefix.u8a = static_cast<uint8_t>(format::Func::kAllReduce);
      call.call.t_enter_ns = enter;
      call.call.t_exit_ns = full ? enter + 5000 : t + 800'000;
      call.call.comm_id = kComm;
      call.call.count = 1 << 20;
      call.call.stream = 0x8000;
      call.call.seq = static_cast<uint32_t>(seq);
      call.call.peer = -1;
      call.call.datatype = 9;
      w.put(call);
      if (full) {
        Record l = blank(RecordKind::kLaunch);
        l.launch.t_enter_ns = enter + 1000;
        l.launch.t_exit_ns = enter + 3000;
        l.launch.stream = 0x8000;
        l.launch.correlation = corr;
        w.put(l);
        Record link = blank(RecordKind::kKernelLink);
        link.prefix.u8a = static_cast<uint8_t>(format::Func::kAllReduce);
        link.link.t_ns = enter + 1500;
        link.link.comm_id = kComm;
        link.link.stream = 0x8000;
        link.link.correlation = corr;
        link.link.seq = static_cast<uint32_t>(seq);
        w.put(link);
        Record kr = blank(RecordKind::kKernel);
        kr.prefix.flags = format::kKernelIsNccl;
        kr.prefix.tid = 8;
        kr.kernel.start_ns = enter + 4000;
        kr.kernel.end_ns = t + 900'000;  // ends together on every rank
        kr.kernel.correlation = corr++;
        kr.kernel.name_id = 1;
        w.put(kr);
      }
    }
    bytes += w.finish();
  }
  return bytes;
}

}  // namespace ncclwatch::bench

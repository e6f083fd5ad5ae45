#include "record_builder.h"

#include <algorithm>
#include <cstring>

namespace ncclwatch::test_support {

using format::Record;
using format::RecordKind;

Record blank_record(RecordKind kind, uint32_t tid) {
  Record r;
  std::memset(&r, 0, sizeof r);
  r.prefix.kind = kind;
  r.prefix.tid = tid;
  return r;
}

Record call_record(const CallFields& f) {
  Record r = blank_record(RecordKind::kCall, f.tid);
  r.prefix.u8a = static_cast<uint8_t>(f.func);
  r.call.t_enter_ns = f.enter_ns;
  r.call.t_exit_ns = f.exit_ns;
  r.call.comm_id = f.comm;
  r.call.count = f.count;
  r.call.stream = f.stream;
  r.call.seq = f.seq;
  r.call.peer = f.peer;
  r.call.datatype = f.datatype;
  return r;
}

Record comm_record(const CommFields& f) {
  Record r = blank_record(RecordKind::kComm, f.tid);
  r.prefix.u8a = static_cast<uint8_t>(f.created_by);
  r.comm.t_enter_ns = f.enter_ns;
  r.comm.t_exit_ns = f.exit_ns;
  r.comm.comm_id = f.comm;
  r.comm.parent_id = f.parent;
  r.comm.handle = f.handle;
  r.comm.nranks = f.nranks;
  r.comm.rank = f.rank;
  r.comm.device = f.device;
  return r;
}

Record comm_end_record(uint32_t tid, uint64_t comm, int64_t enter_ns, int64_t exit_ns) {
  Record r = blank_record(RecordKind::kCommEnd, tid);
  r.prefix.u8a = static_cast<uint8_t>(format::Func::kCommDestroy);
  r.comm_end.t_enter_ns = enter_ns;
  r.comm_end.t_exit_ns = exit_ns;
  r.comm_end.comm_id = comm;
  return r;
}

Record identity_record(const IdentityFields& f) {
  Record r = blank_record(RecordKind::kIdentity, f.tid);
  r.prefix.u8a = static_cast<uint8_t>(f.source);
  r.identity.rank = f.rank;
  r.identity.world_size = f.world;
  r.identity.local_rank = f.local_rank;
  r.identity.device = f.device;
  std::memcpy(r.identity.pci_bus_id, f.pci_bus_id.data(),
              std::min(sizeof r.identity.pci_bus_id - 1, f.pci_bus_id.size()));
  return r;
}

Record clock_record(int64_t monotonic_ns, int64_t realtime_ns, uint32_t window_ns) {
  Record r = blank_record(RecordKind::kClock, window_ns);
  r.clock.monotonic_ns = monotonic_ns;
  r.clock.realtime_ns = realtime_ns;
  return r;
}

Record kernel_record(const KernelFields& f) {
  Record r = blank_record(RecordKind::kKernel, f.stream_id);
  r.prefix.u8a = static_cast<uint8_t>(format::ActivityKind::kKernel);
  r.prefix.u8b = f.device;
  r.prefix.flags = f.nccl ? format::kKernelIsNccl : 0;
  r.kernel.start_ns = f.start_ns;
  r.kernel.end_ns = f.end_ns;
  r.kernel.correlation = f.correlation;
  r.kernel.name_id = f.name_id;
  r.kernel.context_id = f.context_id;
  return r;
}

std::vector<Record> string_records(uint32_t id, const std::string& text) {
  const std::size_t chunks =
      std::min(format::kMaxStringChunks,
               std::max<std::size_t>(
                   1, (text.size() + format::kStringChunkBytes - 1) / format::kStringChunkBytes));
  std::vector<Record> out;
  out.reserve(chunks);
  for (std::size_t c = 0; c < chunks; ++c) {
    Record r = blank_record(RecordKind::kString, id);
    r.prefix.u8a = static_cast<uint8_t>(c);
    if (c + 1 == chunks) r.prefix.flags = format::kStringLastChunk;
    const std::size_t at = c * format::kStringChunkBytes;
    if (at < text.size())
      std::memcpy(r.string.text, text.data() + at,
                  std::min(format::kStringChunkBytes, text.size() - at));
    out.push_back(r);
  }
  return out;
}

Record link_record(const LinkFields& f) {
  Record r = blank_record(RecordKind::kKernelLink, f.tid);
  r.prefix.u8a = static_cast<uint8_t>(f.func);
  r.link.t_ns = f.t_ns;
  r.link.comm_id = f.comm;
  r.link.stream = f.stream;
  r.link.correlation = f.correlation;
  r.link.seq = f.seq;
  return r;
}

Record launch_record(const LaunchFields& f) {
  Record r = blank_record(RecordKind::kLaunch, f.tid);
  r.prefix.u8a = static_cast<uint8_t>(f.api);
  r.launch.t_enter_ns = f.enter_ns;
  r.launch.t_exit_ns = f.exit_ns;
  r.launch.stream = f.stream;
  r.launch.correlation = f.correlation;
  return r;
}

Record nvtx_record(uint32_t tid, int64_t start_ns, int64_t end_ns, uint32_t name_id) {
  Record r = blank_record(RecordKind::kNvtx, tid);
  r.prefix.u8a = 0xff;  // no device
  r.nvtx.start_ns = start_ns;
  r.nvtx.end_ns = end_ns;
  r.nvtx.name_id = name_id;
  return r;
}

Record unique_id_record(const UniqueIdFields& f) {
  Record r = blank_record(RecordKind::kUniqueId, f.tid);
  r.prefix.u8a = static_cast<uint8_t>(f.func);
  r.unique_id.t_enter_ns = f.enter_ns;
  r.unique_id.t_exit_ns = f.exit_ns;
  r.unique_id.id_hash = f.hash;
  return r;
}

Record sched_record(uint32_t tid, int64_t t_ns, uint64_t on_cpu_ns, uint64_t wait_ns,
                    uint64_t timeslices) {
  Record r = blank_record(RecordKind::kSched, tid);
  r.sched.t_ns = t_ns;
  r.sched.on_cpu_ns = on_cpu_ns;
  r.sched.wait_ns = wait_ns;
  r.sched.timeslices = timeslices;
  return r;
}

Record step_record(const StepFields& f) {
  Record r = blank_record(RecordKind::kStep, f.ref_seq);
  r.prefix.u8a = static_cast<uint8_t>(f.source);
  r.prefix.u8b = static_cast<uint8_t>(f.timing);
  r.prefix.flags = f.flags;
  r.step.step = f.step;
  r.step.calls = f.calls;
  r.step.start_ns = f.start_ns;
  r.step.arrive_ns = f.arrive_ns;
  r.step.sync_ns = f.sync_ns;
  r.step.duration_us = f.duration_us;
  r.step.compute_us = f.compute_us;
  r.step.exposed_us = f.exposed_us;
  r.step.idle_us = f.idle_us;
  r.step.bytes = f.bytes;
  return r;
}

Record window_record(const WindowFields& f) {
  Record r = blank_record(RecordKind::kWindow, f.text_id);
  r.prefix.u8a = static_cast<uint8_t>(f.trigger);
  r.prefix.u8b = static_cast<uint8_t>(f.event);
  r.window.id = f.id;
  r.window.start_ns = f.start_ns;
  r.window.end_ns = f.end_ns;
  r.window.first_step = f.first_step;
  r.window.end_step = f.end_step;
  r.window.detail_records = f.detail_records;
  return r;
}

}  // namespace ncclwatch::test_support

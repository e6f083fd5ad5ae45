// Builders of the records one rank of a fake job writes, for the exporter's unit tests: a
// collective call, its launch link and NCCL kernel, compute kernels, NVTX ranges, and a trace
// file (header + records) or a segment file on disk.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::live::testing {

using format::Record;
using format::RecordKind;

inline constexpr int64_t kMs = 1'000'000;

inline Record comm_record(uint64_t comm, int32_t rank, int32_t nranks) {
  Record r{};
  r.comm.prefix.kind = RecordKind::kComm;
  r.comm.prefix.u8a = static_cast<uint8_t>(format::Func::kCommInitRank);
  r.comm.t_enter_ns = 1;
  r.comm.t_exit_ns = 2;
  r.comm.comm_id = comm;
  r.comm.rank = rank;
  r.comm.nranks = nranks;
  r.comm.device = rank;
  return r;
}

inline Record call_record(format::Func f, uint64_t comm, uint32_t seq, uint64_t count,
                          int64_t enter, int64_t exit, uint32_t group_id = 0) {
  Record r{};
  r.call.prefix.kind = RecordKind::kCall;
  r.call.prefix.u8a = static_cast<uint8_t>(f);
  r.call.t_enter_ns = enter;
  r.call.t_exit_ns = exit;
  r.call.comm_id = comm;
  r.call.count = count;
  r.call.datatype = 7;  // float32
  r.call.seq = seq;
  r.call.group_id = group_id;
  r.call.stream = 0x10;
  r.call.peer = -1;
  return r;
}

inline Record link_record(uint32_t correlation, uint64_t comm, uint32_t seq, int64_t t,
                          uint32_t group_id = 0) {
  Record r{};
  r.link.prefix.kind = RecordKind::kKernelLink;
  r.link.prefix.u8a =
      static_cast<uint8_t>(comm != 0 ? format::Func::kAllReduce : format::Func::kGroupEnd);
  r.link.t_ns = t;
  r.link.comm_id = comm;
  r.link.stream = 0x10;
  r.link.correlation = correlation;
  r.link.seq = seq;
  r.link.group_id = group_id;
  return r;
}

inline Record kernel_record(int64_t start, int64_t end, bool nccl, uint32_t correlation = 0) {
  Record r{};
  r.kernel.prefix.kind = RecordKind::kKernel;
  r.kernel.prefix.u8a = static_cast<uint8_t>(format::ActivityKind::kKernel);
  r.kernel.prefix.flags = nccl ? format::kKernelIsNccl : 0;
  r.kernel.start_ns = start;
  r.kernel.end_ns = end;
  r.kernel.correlation = correlation;
  return r;
}

inline Record string_record(uint32_t id, const char* text) {
  Record r{};
  r.string.prefix.kind = RecordKind::kString;
  r.string.prefix.tid = id;
  r.string.prefix.flags = format::kStringLastChunk;
  std::strncpy(r.string.text, text, sizeof r.string.text);
  return r;
}

inline Record nvtx_record(uint32_t name_id, int64_t start, int64_t end) {
  Record r{};
  r.nvtx.prefix.kind = RecordKind::kNvtx;
  r.nvtx.start_ns = start;
  r.nvtx.end_ns = end;
  r.nvtx.name_id = name_id;
  return r;
}

inline format::ProcessInfo process(const std::string& job, const std::string& host, int64_t pid,
                                   int32_t rank) {
  format::ProcessInfo p{};
  std::strncpy(p.job, job.c_str(), sizeof p.job - 1);
  std::strncpy(p.host, host.c_str(), sizeof p.host - 1);
  p.pid = pid;
  p.rank = rank;
  p.local_rank = rank;
  p.world_size = 4;
  p.device = rank;
  return p;
}

// Appends `records` to the trace file at `path` (creating it with an open header).
inline void append_trace(const std::string& path, const format::ProcessInfo& p,
                         const std::vector<Record>& records,
                         uint32_t state = format::kTraceStateOpen) {
  const bool exists = ::access(path.c_str(), F_OK) == 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0600);
  format::TraceHeader h = format::trace_header(state, p);
  h.mode = 1;
  if (!exists || state != format::kTraceStateOpen) {
    if (state != format::kTraceStateOpen) {
      struct stat st {};
      ::fstat(fd, &st);
      h.records = (st.st_size - sizeof h) / sizeof(Record) + records.size();
    }
    (void)::pwrite(fd, &h, sizeof h, 0);
  }
  ::lseek(fd, 0, SEEK_END);
  if (!records.empty()) (void)::write(fd, records.data(), records.size() * sizeof(Record));
  ::close(fd);
}

}  // namespace ncclwatch::live::testing

// In-memory model of one rank's trace: what every reader (ncclwatch trace files, Kineto traces)
// produces and every analysis consumes. This is the seam between "interpret" and "analyze".
//
// Times are nanoseconds on the rank's own host clock (CLOCK_MONOTONIC for ncclwatch traces,
// the trace's own µs timebase x 1000 for Kineto). Cross-host alignment is applied through
// ClockAlignment (clock_alignment.h), never by rewriting these values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/comm_family.h"
#include "model/dropped_gpu_records.h"
#include "model/losses.h"
#include "ncclwatch/format.h"

namespace ncclwatch::analysis {
struct RankDigest;  // collector/analysis/rank_digest.h
}

namespace ncclwatch::model {

using format::Func;

// One NCCL API call (collective or point-to-point) on the host. Kept at 80 bytes: a host-only
// trace holds one per 64-byte record, and the collector must stay within 1.5 x the trace size.
struct CallEvent {
  int64_t enter_ns = 0;
  int64_t exit_ns = 0;
  uint64_t comm_id = 0;
  uint64_t seq = 0;  // unwrapped (the record holds the low 32 bits)
  uint64_t count = 0;
  uint32_t stream = 0;  // fold_stream(cudaStream_t): only compared for equality
  int32_t peer = -1;    // root or peer, -1 if none
  uint32_t group_id = 0;
  int32_t kernel = -1;  // index into RankTrace::kernels of the GPU work of this call, -1 none
  Func func = Func::kUnknown;
  uint8_t datatype = 0;  // ncclDataType_t
  uint8_t redop = 0;
  int8_t result = 0;         // ncclResult_t
  uint8_t flags = 0;         // format::kCall* bits
  int64_t gpu_start_ns = 0;  // GPU interval of this call (kernel or CUDA events), 0/0 if none
  int64_t gpu_end_ns = 0;
  // Bytes this rank passes to NCCL (count x element size, as format::call_bytes).
  uint64_t bytes() const { return count * format::datatype_size(datatype); }
  bool has_gpu() const {
    return gpu_end_ns > gpu_start_ns || (gpu_start_ns != 0 && gpu_end_ns == gpu_start_ns);
  }
};
static_assert(sizeof(CallEvent) == 80, "see the comment above CallEvent");

// CallEvent::flags bit (not a format bit): the call was entered and never seen returning
// (format::InFlightRecord); exit_ns is then the last time it was seen in flight.
inline constexpr uint8_t kCallNeverReturned = 1u << 7;
static_assert((kCallNeverReturned & (format::kCallInGroup | format::kCallGraphCaptured |
                                     format::kCallNonBlocking | format::kCallNoKernel)) == 0);

// A cudaStream_t value folded to 32 bits. Streams of one process are distinct allocations, so
// their folded values differ in practice; 0 stays 0 ("no stream").
constexpr uint32_t fold_stream(uint64_t stream) {
  return static_cast<uint32_t>(stream ^ (stream >> 32));
}

// One GPU activity (kernel, memcpy or memset).
struct KernelEvent {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t stream = 0;  // CUPTI stream id / Kineto tid
  uint32_t name = 0;    // index into RankTrace::names (0 = "")
  uint32_t correlation = 0;
  int32_t call = -1;   // index into RankTrace::calls of the first NCCL call it serves, -1 none
  uint64_t bytes = 0;  // memcpy/memset bytes
  int16_t device = -1;
  format::ActivityKind kind = format::ActivityKind::kKernel;
  // A communication kernel: NCCL's, or any family of collector/kernels/comm_kernel_table (the
  // analyses count all of them as communication; the name is kept from when only NCCL's were).
  bool nccl = false;
  CommFamily family = CommFamily::kNone;  // whose communication kernel (kNone: compute)
};

// Host side of a kernel launch (runtime/driver launch API).
struct LaunchEvent {
  int64_t enter_ns = 0;
  int64_t exit_ns = 0;
  uint64_t stream = 0;
  uint32_t correlation = 0;
  uint32_t tid = 0;
};

// A user range (NVTX, or Kineto's ProfilerStep#N).
struct RangeEvent {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t name = 0;  // index into RankTrace::names
  uint32_t tid = 0;
};

// A reading of how much CPU one thread that calls NCCL got (format::SchedRecord): cumulative
// since the thread started, so only differences between readings of one thread mean anything.
struct SchedSample {
  int64_t t_ns = 0;
  uint32_t tid = 0;
  uint64_t on_cpu_ns = 0;
  uint64_t wait_ns = 0;  // runnable, waiting for a CPU
};

// A communicator as seen by this rank.
struct CommInfo {
  uint64_t id = 0;
  uint64_t parent = 0;
  uint64_t handle = 0;
  int32_t nranks = 0;
  int32_t rank = -1;  // rank inside the comm
  int32_t device = -1;
  Func created_by = Func::kUnknown;
  int64_t created_ns = 0;
  std::string name;  // process-group name where the source knows it (Kineto)
  // Calls made from communication kernels no host call launched (collector/kernels): their seq
  // is the kernel's place on its stream, aligned across ranks when the job is loaded.
  bool from_kernels = false;
};

enum class TimingSource : uint8_t {
  kHostOnly = 0,  // only host call times
  kCupti = 1,     // kernels through CUPTI
  kEvents = 2,    // collectives through CUDA events (lite mode)
  kKineto = 3,    // a PyTorch-profiler trace
  kNsys = 4,      // an Nsight Systems export (SQLite)
};

enum class KernelScope : uint8_t { kAll = 0, kNcclOnly = 1, kSampled = 2 };

// "all", "nccl", "sampled:N" (N unknown: "sampled"): as NCCLWATCH_KERNELS spells it.
inline std::string kernel_scope_name(KernelScope k, uint32_t every) {
  if (k == KernelScope::kNcclOnly) return "nccl";
  if (k == KernelScope::kSampled) return every ? "sampled:" + std::to_string(every) : "sampled";
  return "all";
}

// Name used in the report's tables and JSON.
constexpr const char* timing_name(TimingSource t) {
  switch (t) {
    case TimingSource::kCupti:
      return "cupti";
    case TimingSource::kEvents:
      return "cuda-events";
    case TimingSource::kKineto:
      return "kineto";
    case TimingSource::kNsys:
      return "nsys";
    case TimingSource::kHostOnly:
      break;
  }
  return "host-only";
}

// A hooked call of any kind (collective, send/recv, group, comm, GetUniqueId) as the hang
// verdict needs it: the call a rank never returned from, or the last one it returned from.
struct HookedCall {
  int64_t enter_ns = 0;
  int64_t exit_ns = 0;  // never returned: the last time it was seen in flight
  uint64_t comm_id = 0;
  uint64_t seq = 0;    // unwrapped; collectives and send/recv only
  uint64_t count = 0;  // element count; nranks for comm inits
  uint32_t tid = 0;
  int32_t peer = -1;  // root / peer; for comm inits the rank in the new comm
  uint32_t group_id = 0;
  Func func = Func::kUnknown;
  uint8_t datatype = 0;
  bool returned = true;
  uint8_t redop = 0;
  uint64_t bytes() const { return count * format::datatype_size(datatype); }
};

// A capture window as this rank saw it (format::WindowRecord, open and close joined by id).
struct WindowMark {
  uint64_t id = 0;
  format::WindowTrigger trigger = format::WindowTrigger::kWholeRun;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // 0: never closed (the process died or the trace was cut inside it)
  uint64_t first_step = format::kNoStep;
  uint64_t end_step = format::kNoStep;
  int64_t requested_realtime_ns = 0;
  uint64_t detail_records = 0;
  std::string text;  // what triggered it ("step time +18% since 03:12 ..."), "" if none
  bool closed = false;
};

struct RankInfo {
  int32_t rank = -1;  // global rank
  int32_t world_size = -1;
  int32_t local_rank = -1;
  int32_t device = -1;
  std::string host;
  std::string job;
  std::string pci_bus_id;
  int64_t pid = 0;
  std::string source;     // file it came from
  uint64_t records = 0;   // records read
  Losses losses;          // what the shim counted instead of recording (trace header)
  uint64_t skipped = 0;   // records the reader rejected
  bool salvaged = false;  // recovered from a dead process's segment
  bool complete = true;   // file closed normally
  TimingSource timing = TimingSource::kHostOnly;
  // Compute kernels left out on purpose (NCCLWATCH_KERNELS, trace header kernel_filter): none,
  // all of them (nccl), or all but those starting in the 1 s windows w (rank clock, ns / 1e9)
  // with w % kernel_sample_every == 0 (sampled:N; 0: N unknown — a trace written before the
  // header said, whose windows are those holding compute kernels).
  KernelScope kernels = KernelScope::kAll;
  uint32_t kernel_sample_every = 0;
  // monotonic -> realtime: realtime = t + wall_offset_ns (from the clock anchors).
  int64_t wall_offset_ns = 0;
  // Latest host time the process is known to have been alive (clock anchors are written every
  // second by the drain thread, in-flight records when a call is seen waiting), 0 if unknown.
  int64_t alive_until_ns = 0;
  bool entry_evidence = true;  // layout version >= 2: calls never returned from are visible
  // What the trace itself recorded about the software and hardware ("" unknown): Kineto's
  // distributedInfo.nccl_version and deviceProperties[].name of the rank's device.
  std::string nccl_version;
  std::string gpu_name;
};

struct RankTrace {
  RankInfo info;
  std::vector<CommInfo> comms;
  std::vector<CallEvent> calls;      // sorted by enter_ns
  std::vector<KernelEvent> kernels;  // sorted by start_ns
  std::vector<LaunchEvent> launches;
  std::vector<RangeEvent> ranges;
  std::vector<std::string> names{""};  // interned names; names[0] == ""
  // Raw GPU-tie records as read; collector/timeline turns them into CallEvent::kernel/gpu_*.
  std::vector<format::KernelLinkRecord> links;
  std::vector<format::CollGpuRecord> coll_gpu;
  // CPU scheduling of its NCCL-calling threads, sorted by (tid, t_ns); empty before layout
  // version 4 and for Kineto traces.
  std::vector<SchedSample> sched;
  // Hooked calls entered and never returned from (one per call, oldest first). Collectives and
  // send/recv among them are also in `calls`, flagged kCallNeverReturned.
  std::vector<HookedCall> never_returned;
  HookedCall last_returned;  // the hooked call that returned last (func kUnknown if none)
  // Per-step summaries (layout version 5), in step order, and the capture windows in start order.
  std::vector<format::StepRecord> steps;
  // Valid summaries read and not kept in `steps` (before a whole-run window opened, and no
  // keep_steps: trace/rank_loader.h): 0 means `steps` holds every one the files hold.
  uint64_t steps_not_kept = 0;
  std::vector<WindowMark> windows;
  // GPU timing switched on or off (NCCLWATCH_SUMMARY_GPU), in the order written.
  std::vector<format::GpuTimingRecord> gpu_timing;
  // Set when the loader took what the report needs from the GPU records and dropped them
  // (kernels, launches, links and coll_gpu are then empty; the GPU linker ran first): a
  // full-mode trace is ~95 % GPU records (issue 24). Null: the records are here.
  std::shared_ptr<const DroppedGpuRecords> dropped;
  std::shared_ptr<const analysis::RankDigest> digest;

  const std::string& name_of(uint32_t id) const { return id < names.size() ? names[id] : names[0]; }
};

}  // namespace ncclwatch::model

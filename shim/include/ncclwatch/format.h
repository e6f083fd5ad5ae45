// ncclwatch record format: the contract between the shim (writer) and the collector (reader).
//
// Everything the shim leaves behind -- the shared-memory segment of a live process and the trace
// file on disk -- is described here and nowhere else. This header depends on the C++ standard
// library only, so both sides (and the fakes) can include it.
//
// Rules:
//  * Every record is exactly 64 bytes (one cache line) and trivially copyable. A record is a union
//    of per-kind layouts that all start with RecordPrefix.
//  * Any change to a layout bumps kLayoutVersion; readers refuse other versions with a clear error.
//  * Readers treat everything as untrusted: check magic, version, sizes, and skip records of
//    unknown kind (counting them) instead of trusting them.
//
// Clock: every timestamp is nanoseconds of CLOCK_MONOTONIC on the host that wrote it (read via
// clock_gettime, which is served by the vDSO: no syscall on the hot path). CLOCK_MONOTONIC is
// chosen over CLOCK_REALTIME because NTP steps must never reorder events inside one process;
// it is shared by all processes of one host, so ranks on one host need no alignment at all.
// To place events on wall time, the writer stores ClockAnchor pairs (monotonic, realtime) read
// back-to-back; wall = realtime + (t - monotonic) using the anchor nearest in time. GPU
// timestamps (CUPTI, CUDA events) are converted to this clock by the shim before they are written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ncclwatch::format {

// Version 2 added the per-thread in-flight slots of the segment header (InFlightSlot) and the
// InFlightRecord kind. Version 3 added the loss counters (LossCounts) to both headers; in a
// trace file they take the space that was reserved (zero) before, so a version 1 or 2 file reads
// as "nothing of these kinds counted". Trace files of versions 1 and 2 hold the same record
// layouts minus newer kinds: readers still load them (kMinTraceLayoutVersion); segments must
// match kLayoutVersion exactly. Version 4 added the SchedRecord kind (CPU run-queue waiting of the
// threads that call NCCL); the layouts of versions 1 to 3 are unchanged in it. The word after
// `mode` in both headers (kernel_filter: NCCLWATCH_KERNELS) was reserved and zero until version
// 4's writers filled it; zero still reads as "every kernel kept".
// Version 5 (always on, docs/always-on.md) added the StepRecord and WindowRecord kinds, the loss
// counter detail_evicted (in what was LossCounts::reserved), ProcessInfo::part (in what was
// ProcessInfo::reserved[0]: a process's trace may be split into parts, part 0 keeping the old
// file name) and, in the segment only, the drain checkpoint and the capture request
// (DrainCheckpoint, CaptureRequest). A version 1-4 file reads as part 0 with no steps, no windows
// and nothing evicted.
inline constexpr uint32_t kLayoutVersion = 5;
inline constexpr uint32_t kMinTraceLayoutVersion = 1;
inline constexpr std::size_t kRecordSize = 64;
inline constexpr std::size_t kHostNameSize = 64;
inline constexpr std::size_t kJobIdSize = 64;
inline constexpr std::size_t kPathSize = 256;

// Magic numbers: ASCII, readable in a hex dump.
inline constexpr uint64_t kSegmentMagic = 0x474553574C43434EULL;  // "NCCLWSEG" little-endian
inline constexpr uint64_t kTraceMagic = 0x435254574C43434EULL;    // "NCCLWTRC" little-endian

// The NCCL API functions the shim wraps (one table in the shim declares them all; this enum is
// the identity that ends up in records). Values are part of the format: append only.
enum class Func : uint8_t {
  kUnknown = 0,
  kAllReduce = 1,
  kBroadcast = 2,
  kBcast = 3,
  kReduce = 4,
  kAllGather = 5,
  kReduceScatter = 6,
  kAlltoAll = 7,
  kGather = 8,
  kScatter = 9,
  kSend = 10,
  kRecv = 11,
  kGroupStart = 12,
  kGroupEnd = 13,
  kGetUniqueId = 14,
  kCommInitRank = 15,
  kCommInitRankConfig = 16,
  kCommInitRankScalable = 17,
  kCommInitAll = 18,
  kCommSplit = 19,
  kCommShrink = 20,
  kCommFinalize = 21,
  kCommDestroy = 22,
  kCommAbort = 23,
  kCommRevoke = 24,
  kCount = 25,
};

// The NCCL API name of a Func ("ncclAllReduce"), for messages; "ncclUnknown" outside the enum.
constexpr const char* nccl_api_name(Func f) {
  constexpr const char* kNames[] = {"ncclUnknown",
                                    "ncclAllReduce",
                                    "ncclBroadcast",
                                    "ncclBcast",
                                    "ncclReduce",
                                    "ncclAllGather",
                                    "ncclReduceScatter",
                                    "ncclAlltoAll",
                                    "ncclGather",
                                    "ncclScatter",
                                    "ncclSend",
                                    "ncclRecv",
                                    "ncclGroupStart",
                                    "ncclGroupEnd",
                                    "ncclGetUniqueId",
                                    "ncclCommInitRank",
                                    "ncclCommInitRankConfig",
                                    "ncclCommInitRankScalable",
                                    "ncclCommInitAll",
                                    "ncclCommSplit",
                                    "ncclCommShrink",
                                    "ncclCommFinalize",
                                    "ncclCommDestroy",
                                    "ncclCommAbort",
                                    "ncclCommRevoke"};
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<std::size_t>(Func::kCount));
  const auto i = static_cast<std::size_t>(f);
  return i < static_cast<std::size_t>(Func::kCount) ? kNames[i] : "ncclUnknown";
}

// Collectives are matched across ranks by (comm id, seq); Send and Recv by (comm id, sender,
// receiver, per-peer seq).
constexpr bool is_collective(Func f) {
  return f >= Func::kAllReduce && f <= Func::kScatter;
}
constexpr bool is_p2p(Func f) {
  return f == Func::kSend || f == Func::kRecv;
}

enum class RecordKind : uint8_t {
  kInvalid = 0,     // an all-zero slot: never written
  kCall = 1,        // CallRecord: one collective or point-to-point call
  kGroup = 2,       // GroupRecord: ncclGroupStart / ncclGroupEnd
  kComm = 3,        // CommRecord: a communicator created (init, split, shrink, ...)
  kCommEnd = 4,     // CommEndRecord: finalize / destroy / abort / revoke
  kIdentity = 5,    // IdentityRecord: rank / world / device learned during the run
  kClock = 6,       // ClockRecord: a (monotonic, realtime) anchor pair
  kKernel = 7,      // KernelRecord: a GPU activity (kernel, memcpy, memset) on the host clock
  kString = 8,      // StringRecord: a chunk of an interned string (kernel or NVTX name)
  kKernelLink = 9,  // KernelLinkRecord: a kernel launch tied to the NCCL call(s) in flight
  kCollGpu = 10,    // CollGpuRecord: GPU start/end of a collective or group measured by CUDA events
  kLaunch = 11,     // LaunchRecord: host side of a kernel launch (runtime/driver API call)
  kNvtx = 12,       // NvtxRecord: an NVTX range
  kUniqueId = 13,   // UniqueIdRecord: ncclGetUniqueId result hash
  kInFlight = 14,   // InFlightRecord: a hooked call entered and not returned when last looked at
  kSched = 15,      // SchedRecord: CPU time and run-queue wait of a thread that calls NCCL (v4)
  kStep = 16,       // StepRecord: one step of this rank, summarized by the drain thread (v5)
  kWindow = 17,     // WindowRecord: a capture window opened or closed (v5)
  kGpuTiming = 18,  // GpuTimingRecord: GPU timing switched on or off (v5, later: see there)
  kCount = 19,
};

// The two tiers (docs/always-on.md). Detail kinds are written to the trace file only inside a
// capture window (or always, with NCCLWATCH_DETAIL=all) and are the first to go when the disk
// budget (NCCLWATCH_MAX_MB) is reached; every other kind -- identity, clocks, comms, names,
// entry evidence, step summaries, window marks, and kinds this version does not know -- is
// always written and never removed.
constexpr bool is_detail_kind(RecordKind k) {
  switch (k) {
    case RecordKind::kCall:
    case RecordKind::kGroup:
    case RecordKind::kKernel:
    case RecordKind::kKernelLink:
    case RecordKind::kCollGpu:
    case RecordKind::kLaunch:
    case RecordKind::kNvtx:
      return true;
    default:
      return false;
  }
}

// The first 8 bytes of every record.
struct RecordPrefix {
  RecordKind kind;
  uint8_t flags;  // per-kind flag bits
  uint8_t u8a;    // per-kind small field (documented per layout)
  uint8_t u8b;    // per-kind small field
  uint32_t tid;   // OS thread id of the writer thread (gettid), or a per-kind 32-bit field
};
static_assert(sizeof(RecordPrefix) == 8);

// Call flags.
inline constexpr uint8_t kCallInGroup = 1u << 0;        // issued between GroupStart and GroupEnd
inline constexpr uint8_t kCallGraphCaptured = 1u << 1;  // stream was capturing a CUDA graph
inline constexpr uint8_t kCallNonBlocking = 1u << 2;    // the comm is non-blocking
inline constexpr uint8_t kCallNoKernel = 1u << 3;       // known to launch no kernel (nranks==1)

// One collective or point-to-point call. prefix.u8a = Func, prefix.u8b = (int8) ncclResult_t.
struct CallRecord {
  RecordPrefix prefix;
  int64_t t_enter_ns;   // host clock at wrapper entry
  int64_t t_exit_ns;    // host clock after the real function returned
  uint64_t comm_id;     // equal on every rank of the communicator
  uint64_t count;       // element count as passed (sendcount for AllGather, recvcount for RS)
  uint64_t stream;      // cudaStream_t value as passed
  uint32_t seq;         // collectives: per-comm sequence (low 32 bits); p2p: per (comm, peer)
  uint32_t group_id;    // per-process id of the enclosing outermost group, 0 = none
  int32_t peer;         // root (rooted collectives) or peer (send/recv), -1 if none
  uint8_t datatype;     // ncclDataType_t
  uint8_t redop;        // ncclRedOp_t; 255 = user-defined (ncclRedOpCreatePreMulSum)
  uint8_t group_depth;  // nesting depth of GroupStart at the time of the call
  uint8_t reserved;
};

// GroupStart / GroupEnd. prefix.u8a = Func (kGroupStart / kGroupEnd), prefix.u8b = result.
struct GroupRecord {
  RecordPrefix prefix;
  int64_t t_enter_ns;
  int64_t t_exit_ns;
  uint32_t group_id;  // the outermost group this start/end belongs to
  uint32_t depth;     // depth after GroupStart / before GroupEnd
  uint64_t reserved[4];
};

// A communicator that came into existence. prefix.u8a = Func that created it, u8b = result.
// Comm id rules (every rank must compute the same value):
//   InitRank / InitRankConfig : hash of the 128-byte ncclUniqueId
//   InitRankScalable          : hash of the first of its nId unique ids (all ranks get all ids)
//   InitAll(ndev, devlist)    : hash of ("initall", pid, per-process InitAll counter); the comms
//                               of one InitAll live in one process, each has rank = index
//   Split(parent, color, key) : hash of (parent id, index of this split among the parent's
//                               splits, color); every parent rank calls split, so the index
//                               agrees; color NCCL_SPLIT_NOCOLOR creates no comm (id 0)
//   Shrink(parent, excl, n)   : hash of (parent id, index of this split/shrink among the
//                               parent's, sorted excluded ranks)
struct CommRecord {
  RecordPrefix prefix;
  int64_t t_enter_ns;
  int64_t t_exit_ns;
  uint64_t comm_id;
  uint64_t parent_id;  // 0 if none
  uint64_t handle;     // ncclComm_t pointer value (process-local; to join with NCCL logs)
  int32_t nranks;
  int32_t rank;
  int32_t device;  // CUDA device ordinal, -1 if unknown
  int32_t color;   // split color / shrink flags, 0 otherwise
};

// Finalize / destroy / abort / revoke. prefix.u8a = Func, u8b = result.
struct CommEndRecord {
  RecordPrefix prefix;
  int64_t t_enter_ns;
  int64_t t_exit_ns;
  uint64_t comm_id;
  uint64_t reserved[4];
};

// Identity learned during the run (the global rank may only be known at first comm init).
// prefix.u8a = RankSource.
enum class RankSource : uint8_t { kUnknown = 0, kEnv = 1, kFirstComm = 2, kCount };
struct IdentityRecord {
  RecordPrefix prefix;
  int32_t rank;
  int32_t world_size;
  int32_t local_rank;
  int32_t device;
  char pci_bus_id[16];  // "0000:1b:00.0", NUL-padded, empty if unknown
  uint64_t reserved[3];
};

// Clock anchor: monotonic and realtime read back-to-back (the pair with the shortest read
// window out of a few tries). prefix.tid = width of that window in ns (uncertainty).
struct ClockRecord {
  RecordPrefix prefix;
  int64_t monotonic_ns;
  int64_t realtime_ns;
  uint64_t reserved[5];
};

// GPU activity. prefix.u8a = ActivityKind, prefix.u8b = device ordinal, prefix.tid = CUPTI
// stream id. Timestamps already converted to the host clock.
enum class ActivityKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2, kCount };
inline constexpr uint8_t kKernelIsNccl =
    1u << 0;  // name says NCCL (ncclKernel_, ncclDevKernel_, ncclSymk)
inline constexpr uint8_t kKernelFromGraph = 1u << 1;  // replayed from a CUDA graph
struct KernelRecord {
  RecordPrefix prefix;
  int64_t start_ns;
  int64_t end_ns;
  uint32_t correlation;  // CUPTI correlation id (joins KernelLinkRecord and LaunchRecord)
  uint32_t name_id;      // StringRecord id, 0 = none
  uint64_t graph_node_id;
  uint32_t graph_id;
  uint32_t context_id;
  uint64_t bytes;  // memcpy/memset bytes, 0 for kernels
  uint64_t reserved;
};

// A chunk of an interned string. prefix.tid = string id (per process, > 0), prefix.u8a = chunk
// index, flags bit 0 = last chunk. Names longer than kMaxStringChunks * kStringChunkBytes bytes are
// truncated.
inline constexpr uint8_t kStringLastChunk = 1u << 0;
inline constexpr std::size_t kStringChunkBytes = 56;
inline constexpr std::size_t kMaxStringChunks = 8;
struct StringRecord {
  RecordPrefix prefix;
  char text[kStringChunkBytes];  // not NUL-terminated when full
};

// A GPU launch tied to the NCCL call(s) the launching thread was inside. prefix.u8a = Func of
// the call (kGroupEnd when the launch happened inside ncclGroupEnd).
struct KernelLinkRecord {
  RecordPrefix prefix;
  int64_t t_ns;          // host time of the launch
  uint64_t comm_id;      // comm of the call (0 when the launch belongs to a whole group)
  uint64_t stream;       // cudaStream_t / CUstream of the launch
  uint32_t correlation;  // CUPTI correlation id of the launch
  uint32_t seq;          // call's seq (collectives) when comm_id != 0
  uint32_t group_id;     // group the launch belongs to, 0 = none
  uint32_t reserved0;
  uint64_t reserved[2];
};

// GPU interval of a collective or group measured with a pair of CUDA events (lite mode).
// prefix.u8a = Func (kGroupEnd for a whole group), prefix.u8b = device.
struct CollGpuRecord {
  RecordPrefix prefix;
  int64_t start_ns;
  int64_t end_ns;
  uint64_t comm_id;
  uint64_t stream;
  uint32_t seq;
  uint32_t group_id;
  uint64_t reserved[2];
};

// Host side of a kernel launch (cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, ...).
// prefix.u8a = LaunchApi.
enum class LaunchApi : uint8_t {
  kOther = 0,
  kRuntimeKernel = 1,
  kRuntimeGraph = 2,
  kDriverKernel = 3,
  kDriverGraph = 4,
  kCount  // not a value: the number of values (the readers' name tables are checked against it)
};
struct LaunchRecord {
  RecordPrefix prefix;
  int64_t t_enter_ns;
  int64_t t_exit_ns;
  uint64_t stream;
  uint32_t correlation;
  uint32_t reserved0;
  uint64_t reserved[3];
};

// An NVTX range (push/pop or start/end). prefix.u8a = device or 0xff, prefix.tid = thread.
struct NvtxRecord {
  RecordPrefix prefix;
  int64_t start_ns;
  int64_t end_ns;
  uint32_t name_id;  // StringRecord id
  uint32_t domain_id;
  uint64_t reserved[4];
};

// ncclGetUniqueId: the hash of the id handed out (joins the root's trace with the comm).
struct UniqueIdRecord {
  RecordPrefix prefix;
  int64_t t_enter_ns;
  int64_t t_exit_ns;
  uint64_t id_hash;
  uint64_t reserved[4];
};

// What a hooked call looked like when it was entered: written into the calling thread's
// InFlightSlot before the real function runs (see SegmentHeader), copied into InFlightRecord.
// Fields as in CallRecord. Group and comm calls set func, t_enter_ns, group_id and comm_id where
// it is known at entry: the comm's id for finalize/destroy/abort/revoke/split/shrink (the
// parent's for split/shrink), the new comm's id for InitRank/InitRankConfig/InitRankScalable
// (hashed from the unique id), 0 for groups, InitAll and GetUniqueId.
struct CallEntry {
  int64_t t_enter_ns;  // equal to the t_enter_ns of the record written when the call returns
  uint64_t comm_id;
  uint64_t count;
  uint64_t stream;
  uint32_t seq;
  uint32_t group_id;
  int32_t peer;
  uint8_t func;   // Func
  uint8_t flags;  // kCall* bits
  uint8_t datatype;
  uint8_t redop;
};
static_assert(sizeof(CallEntry) == 48);

// A hooked call that was entered and had not returned when it was looked at: written by the
// drain thread for calls in flight longer than a second (and for every call in flight at normal
// exit), and by `ncclwatch collect` from the slots of a dead process's segment. A call may get
// more than one (same tid and t_enter_ns); the record written on return supersedes them all.
// prefix.u8a = Func, prefix.flags = kCall* bits, prefix.u8b = InFlightSource, prefix.tid = thread.
enum class InFlightSource : uint8_t { kDrain = 0, kExit = 1, kSalvage = 2, kWatchdog = 3, kCount };
struct InFlightRecord {
  RecordPrefix prefix;
  int64_t t_seen_ns;  // when the call was seen still in flight (host clock)
  CallEntry entry;
};

// How much CPU a thread that calls NCCL got and how long it waited for one (layout version 4):
// the kernel's per-thread schedstat (/proc/self/task/<tid>/schedstat: time on a CPU, time
// runnable but waiting on a run queue, times run), cumulative since the thread started. Written by
// the drain thread (never the hot path) for the threads that own an InFlightSlot, sampled
// periodically: a thread's first record is its baseline, then one whenever its wait grew or a
// while has passed, plus the sample before a jump, so readers interpolate linearly between
// consecutive records of one thread. prefix.tid = the sampled thread.
struct SchedRecord {
  RecordPrefix prefix;
  int64_t t_ns;         // host clock when it was read
  uint64_t on_cpu_ns;   // time running on a CPU
  uint64_t wait_ns;     // time runnable, waiting for a CPU (run-queue delay)
  uint64_t timeslices;  // times it was put on a CPU
  uint64_t reserved[3];
};

// How a StepRecord's step was found (prefix.u8a).
enum class StepSource : uint8_t {
  kCollectives = 0,  // the period of the collective sequence on the reference comm (the comm with
                     // the most ranks): step n starts at the entry of its first collective there
  kNvtx = 1,         // an NVTX range named like a step ("ProfilerStep#N", "train_step", "step")
  kInterval = 2,     // no step structure found: one second of host time; the step number is the
                     // Unix second (CLOCK_REALTIME), so it agrees across ranks and hosts
  kCount = 3,
};
// What a StepRecord's GPU figures come from (prefix.u8b).
enum class StepTiming : uint8_t { kNone = 0, kCupti = 1, kEvents = 2, kCount = 3 };
inline constexpr uint8_t kStepDetail = 1u << 0;      // inside a capture window: full detail kept
inline constexpr uint8_t kStepGpuPartial = 1u << 1;  // summarized before all its GPU records came
inline constexpr uint8_t kStepLast = 1u << 2;        // the run ended inside it (end = last event)
// GPU timing was switched off for some of it (NCCLWATCH_SUMMARY_GPU, GpuTimingRecord): its GPU
// figures are unknown (timing kNone), not zero.
inline constexpr uint8_t kStepGpuOff = 1u << 3;
inline constexpr uint32_t kStepUnknownUs = UINT32_MAX;  // a figure its timing source cannot give

// One step of one rank, summarized by the drain thread from the records it drains (never on the
// hot path), whatever the detail: the run's history (docs/always-on.md). Times on the host clock;
// the four GPU figures are unions of GPU intervals clipped to [start, start + duration) in
// microseconds (saturating), kStepUnknownUs when the timing source lacks them (lite mode knows
// communication only; host-only mode nothing). Waiting for peers and lateness need the other
// ranks: the collector derives them from arrive_ns and sync_ns of every rank's same step.
// prefix.u8a = StepSource, u8b = StepTiming, flags = kStep* bits, prefix.tid = low 32 bits of
// the seq of the step's first collective on the reference comm (joins ranks' steps; 0 if none).
struct StepRecord {
  RecordPrefix prefix;
  uint32_t step;         // step number (StepSource says how it was counted)
  uint32_t calls;        // NCCL calls (collectives and send/recv) entered during the step
  int64_t start_ns;      // host clock
  int64_t arrive_ns;     // entry into the step's first collective on the reference comm, 0: none
  int64_t sync_ns;       // GPU end of that collective on the host clock, 0: not measured
  uint32_t duration_us;  // until the next step starts
  uint32_t compute_us;   // GPU time with a compute kernel running
  uint32_t exposed_us;   // GPU time with an NCCL kernel running and no compute kernel
  uint32_t idle_us;      // GPU time with nothing running (no kernel, memcpy or memset)
  uint64_t bytes;        // bytes this rank passed to NCCL during the step (call_bytes summed)
};

// Why a capture window was opened (WindowRecord prefix.u8a).
enum class WindowTrigger : uint8_t {
  kWholeRun = 0,  // NCCLWATCH_DETAIL=all: full detail for the whole run
  kSchedule = 1,  // NCCLWATCH_CAPTURE
  kOnDemand = 2,  // `ncclwatch capture`
  kStepTime = 3,  // by itself: the step time regressed against its running median
  kWait = 4,      // by itself: the wait at the first collective jumped (a peer turned late)
  kHang = 5,      // by itself: the hang watchdog fired (the ring's recent records are kept)
  kCount = 6,
};
enum class WindowEvent : uint8_t { kOpen = 0, kClose = 1 };
inline constexpr uint64_t kNoStep = UINT64_MAX;

// A capture window opened or closed on this rank (written by the drain thread). Detail kinds in
// [start_ns, end_ns) are in the trace (unless the disk budget removed them later: losses
// .detail_evicted). The same id on every rank for one request, so the collector joins them.
// prefix.u8a = WindowTrigger, u8b = WindowEvent, prefix.tid = StringRecord id of the trigger's
// description ("step time +18% since 03:12 ..."), 0 if none (the drain thread's own strings use
// ids from 0x80000000, above the GPU timeline's).
struct WindowRecord {
  RecordPrefix prefix;
  uint64_t id;
  int64_t start_ns;               // host clock: detail kept from here
  int64_t end_ns;                 // close: detail kept until here; open: 0
  uint64_t first_step;            // first step inside, kNoStep if not step-aligned
  uint64_t end_step;              // close: first step after; open: the requested end (or kNoStep)
  int64_t requested_realtime_ns;  // when it was asked for (CLOCK_REALTIME of the asker), 0: unknown
  uint64_t detail_records;        // close: detail records written inside it
};

// Why GPU timing was switched (GpuTimingRecord prefix.u8b).
enum class GpuTimingReason : uint8_t {
  kSetting = 0,  // NCCLWATCH_SUMMARY_GPU=off: GPU timing only inside capture windows
  kAuto = 1,     // the auto decision, with the figures it was made from (on: it stays on)
  kWindow = 2,   // a capture window is coming (on) or has ended (off)
  kCount = 3,
};

// GPU timing (CUPTI's kernel activity and launch callbacks, or lite mode's CUDA events) switched
// on or off at run time by the drain thread (docs/always-on.md, "GPU timing per window"). Steps
// not wholly inside an "on" span have no GPU figures (StepRecord kStepGpuOff). The auto decision
// (reason kAuto) carries what it was judged from: units (kernels in full mode, NCCL calls in
// lite mode) per step x the cost of one unit against the step time. Added within version 5
// (with no layout change); a reader that predates it skips it as an unknown kind.
// prefix.u8a = 1 on / 0 off, u8b = GpuTimingReason, prefix.tid = the TimingMode it switches
// (1 full, 2 lite).
struct GpuTimingRecord {
  RecordPrefix prefix;
  int64_t t_ns;                  // host clock: in effect from here (on: every launch after it)
  int64_t step_ns;               // kAuto: the mean step time measured, else 0
  uint32_t units_per_step_x100;  // kAuto: kernels (full) or NCCL calls (lite) per step x 100
  uint32_t unit_cost_ns;         // kAuto: the cost of one unit assumed
  uint32_t limit_ppm;            // kAuto: the most GPU timing may cost, in millionths of the step
  uint32_t measured_steps;       // kAuto: steps measured
  uint8_t reserved[24];
};

union Record {
  RecordPrefix prefix;
  CallRecord call;
  GroupRecord group;
  CommRecord comm;
  CommEndRecord comm_end;
  IdentityRecord identity;
  ClockRecord clock;
  KernelRecord kernel;
  StringRecord string;
  KernelLinkRecord link;
  CollGpuRecord coll_gpu;
  LaunchRecord launch;
  NvtxRecord nvtx;
  UniqueIdRecord unique_id;
  InFlightRecord in_flight;
  SchedRecord sched;
  StepRecord step;
  WindowRecord window;
  GpuTimingRecord gpu_timing;
};

static_assert(sizeof(CallRecord) == kRecordSize);
static_assert(sizeof(GroupRecord) == kRecordSize);
static_assert(sizeof(CommRecord) == kRecordSize);
static_assert(sizeof(CommEndRecord) == kRecordSize);
static_assert(sizeof(IdentityRecord) == kRecordSize);
static_assert(sizeof(ClockRecord) == kRecordSize);
static_assert(sizeof(KernelRecord) == kRecordSize);
static_assert(sizeof(StringRecord) == kRecordSize);
static_assert(sizeof(KernelLinkRecord) == kRecordSize);
static_assert(sizeof(CollGpuRecord) == kRecordSize);
static_assert(sizeof(LaunchRecord) == kRecordSize);
static_assert(sizeof(NvtxRecord) == kRecordSize);
static_assert(sizeof(UniqueIdRecord) == kRecordSize);
static_assert(sizeof(InFlightRecord) == kRecordSize);
static_assert(sizeof(SchedRecord) == kRecordSize);
static_assert(sizeof(StepRecord) == kRecordSize);
static_assert(sizeof(WindowRecord) == kRecordSize);
static_assert(sizeof(GpuTimingRecord) == kRecordSize);
static_assert(sizeof(Record) == kRecordSize);
static_assert(std::is_trivially_copyable_v<Record>);
static_assert(std::is_standard_layout_v<CallRecord>);

// What the shim counted instead of recording, besides the ring drops and CUPTI drops that the
// headers carried since version 1 (version 3). Each counter says what the trace is missing, so the
// report can say which figures undercount. Counters are std::atomic in practice in the segment
// (relaxed adds: any thread may count), copied into the trace header when the file is closed or
// salvaged. Field order is the order tools print them in; append only.
struct LossCounts {
  uint64_t lite_untimed;        // lite mode: calls/groups whose GPU interval was not measured
                                // (every CUDA-event slot busy, or a CUDA event call failed)
  uint64_t names_lost;          // kernel/NVTX names not interned (string table full): written as ""
  uint64_t kernels_filtered;    // GPU activities left out by NCCLWATCH_KERNELS (by request)
  uint64_t cupti_unknown;       // CUPTI activity records of a kind the shim does not convert
  uint64_t ring_holes;          // ring positions claimed and never committed (writer stalled or
                                // died mid-record), skipped at exit or by salvage
  uint64_t in_flight_overflow;  // threads that found no free InFlightSlot: their calls have no
                                // entry evidence (a hang inside them is not visible)
  uint64_t ring_overwritten;    // salvage only: ring positions the trace file never got and the
                                // ring no longer held
  uint64_t detail_evicted;      // version 5: detail records removed to keep NCCLWATCH_MAX_MB (the
                                // oldest first; summaries stay)
};
static_assert(sizeof(LossCounts) == 64);
static_assert(std::is_trivially_copyable_v<LossCounts>);

// The one table of LossCounts fields: the JSON key (`ncclwatch dump`, `status`, the report) and
// the words for people ("string table full 34 names"), in field order.
struct LossField {
  uint64_t LossCounts::*counter;
  const char* key;
  const char* label;  // what was lost, followed by the count and `unit`
  const char* unit;
};
inline constexpr LossField kLossFields[] = {
    {&LossCounts::lite_untimed, "lite_untimed", "lite mode untimed", "calls"},
    {&LossCounts::names_lost, "names_lost", "string table full", "names"},
    {&LossCounts::kernels_filtered, "kernels_filtered", "NCCLWATCH_KERNELS filter", "kernels"},
    {&LossCounts::cupti_unknown, "cupti_unknown", "unknown CUPTI activity", "records"},
    {&LossCounts::ring_holes, "ring_holes", "ring holes", "records"},
    {&LossCounts::in_flight_overflow, "in_flight_overflow", "no in-flight slot", "threads"},
    {&LossCounts::ring_overwritten, "ring_overwritten", "overwritten before salvage", "records"},
    {&LossCounts::detail_evicted, "detail_evicted", "disk budget (oldest detail removed)",
     "records"},
};

// NCCLWATCH_KERNELS as both headers record it (kernel_filter), so the collector knows which
// compute kernels are missing on purpose: 0 = every kernel kept (also what writers before this
// field left there, and host or lite mode); else the policy in the top byte and, for sampled:N,
// N in the low 24 bits (settings allow N <= 1,000,000). Readers need not understand it: an
// older reader ignores the field, a newer one reads 0 from older files.
inline constexpr uint32_t kKernelFilterNccl = 1;     // NCCL kernels only
inline constexpr uint32_t kKernelFilterSampled = 2;  // compute in 1 s windows w, w % N == 0
inline constexpr int64_t kKernelSampleWindowNs = 1'000'000'000;
constexpr uint32_t kernel_filter_code(uint32_t policy, uint32_t every) noexcept {
  return policy == 0 ? 0 : (policy << 24) | (every & 0xFFFFFFu);
}
constexpr uint32_t kernel_filter_policy(uint32_t code) noexcept {
  return code >> 24;
}
constexpr uint32_t kernel_filter_every(uint32_t code) noexcept {
  return code & 0xFFFFFFu;
}

// Identity of the writing process, copied into both the segment and the trace file header.
struct ProcessInfo {
  char job[kJobIdSize];      // NUL-terminated
  char host[kHostNameSize];  // NUL-terminated (gethostname or NCCLWATCH_HOST)
  int64_t pid;
  int32_t rank;                // global rank, -1 until known
  int32_t world_size;          // -1 until known
  int32_t local_rank;          // -1 if unknown
  int32_t device;              // CUDA device, -1 if unknown
  int64_t start_monotonic_ns;  // clock anchor at creation
  int64_t start_realtime_ns;
  uint32_t part;  // version 5: which part of the process's trace this file is (0 in versions 1-4;
                  // in the segment: the part the drain thread writes now)
  uint32_t reserved_pad;
  uint64_t reserved[3];
};
static_assert(sizeof(ProcessInfo) == 200);

// Shared-memory segment: SegmentHeader, then `capacity` RingSlots. Named
// "ncclwatch.<job>.<host>.<pid>" in /dev/shm, mode 0600.
//
// The ring is a bounded multi-producer queue with one consumer (the drain thread, or `ncclwatch
// collect` after the process died). Positions grow forever; slot = pos % capacity. A producer
// claims a position by CAS on write_pos only if pos - read_pos < capacity (else it counts a drop),
// writes the record, then publishes slot.seq = pos + 1 (release). The consumer reads slot.seq ==
// pos + 1 (acquire) as "committed". A producer that dies between claim and publish leaves a hole;
// salvage skips holes (counting them) instead of stopping.
struct RingSlot {
  uint64_t seq;  // pos + 1 once the record at pos is committed (atomic in practice)
  uint64_t pad;
  Record record;
};
static_assert(sizeof(RingSlot) == 80);

// One thread's entry evidence (layout version 2). A thread claims a free slot (owner_tid 0 ->
// its tid, CAS) at its first hooked call and frees it when it exits. Before the real NCCL
// function runs, the owner writes the call's CallEntry under a seqlock: version odd while it
// writes, even when the entry is consistent; `active` = 1 from then until the call returns
// (one store). Readers (drain thread, `ncclwatch status`, salvage) copy the slot and accept it
// only if version was the same even value before and after the copy. A thread that finds no
// free slot records without entry evidence (SegmentHeader::losses.in_flight_overflow counts them).
inline constexpr std::size_t kInFlightSlots = 64;
struct InFlightSlot {
  uint32_t owner_tid;  // 0 = free
  uint32_t version;    // seqlock
  uint32_t active;     // 1 while the owner is inside the call of `entry`
  uint32_t calls;      // hooked calls this thread entered (wraps)
  CallEntry entry;
};
static_assert(sizeof(InFlightSlot) == 64);

// The drain thread's progress (version 5), written under a seqlock (version odd while written)
// after every batch it takes from the ring, read by salvage and `ncclwatch capture`. Ring positions
// below `pos` are processed: written to part `part` of the trace (which then held `file_records`
// records) or, detail outside a capture window, deliberately left out. Salvage cuts that part to
// `file_records` and appends the ring from `pos` on, so a file written with a filter still joins
// without duplicates or gaps.
struct DrainCheckpoint {
  uint32_t version;
  uint32_t part;
  uint64_t pos;
  uint64_t file_records;
  uint64_t last_step;  // the newest step this rank started (kNoStep: none yet)
  int64_t step_ns;     // its recent median step time (0: unknown)
  // How last_step was counted: 1 + StepSource (checkpoint_steps_from), 0 where not said (no step
  // yet, or a shim before this field). Ranks that count differently -- one by the clock while it
  // learns, one by learned steps -- name different moments by one step number.
  uint32_t steps_from;
  uint32_t reserved32;
  uint64_t reserved[2];
};
static_assert(sizeof(DrainCheckpoint) == 64);
inline constexpr uint32_t checkpoint_steps_from(StepSource source) {
  return 1 + static_cast<uint32_t>(source);
}

// A capture asked for by `ncclwatch capture` on this node (version 5): written into the segment
// by that command (same user; the segment is 0600) under a seqlock (version odd while written),
// polled by the drain thread every drain period. A new id is a new request. The same request
// reaches other nodes through a control file in the trace directory (docs/always-on.md).
inline constexpr uint32_t kCaptureSteps = 1;    // `first` is a step number, `count` steps
inline constexpr uint32_t kCaptureSeconds = 2;  // `first` is CLOCK_REALTIME ns (0: now), `count` ns
struct CaptureRequest {
  uint32_t version;
  uint32_t unit;  // kCaptureSteps / kCaptureSeconds
  uint64_t id;    // nonzero
  uint64_t first;
  uint64_t count;
  int64_t requested_realtime_ns;
  uint32_t trigger;  // WindowTrigger
  uint32_t reserved0;
  uint64_t reserved[2];
};
static_assert(sizeof(CaptureRequest) == 64);

inline constexpr uint32_t kSegmentStateLive = 1;    // owner process running
inline constexpr uint32_t kSegmentStateClosed = 2;  // owner finished writing its trace file

struct SegmentHeader {
  uint64_t magic;           // kSegmentMagic
  uint32_t layout_version;  // kLayoutVersion
  uint32_t header_size;     // sizeof(SegmentHeader)
  uint32_t record_size;     // kRecordSize
  uint32_t slot_size;       // sizeof(RingSlot)
  uint64_t capacity;        // slots (power of two)
  ProcessInfo process;
  char trace_path[kPathSize];  // the trace file the drain thread appends to
  // Counters below are std::atomic in practice (lock-free 64-bit, same layout).
  alignas(64) uint64_t write_pos;  // next position producers claim
  alignas(64) uint64_t read_pos;   // next position the consumer reads; records below are on disk
  alignas(64) uint64_t dropped;    // records dropped because the ring was full
  uint64_t cupti_dropped;          // records CUPTI reported dropped
  uint64_t drained;                // records appended to the trace file so far
  uint32_t state;                  // kSegmentState*
  uint32_t mode;                   // 0 host-only, 1 full (CUPTI), 2 lite (CUDA events)
  uint32_t kernel_filter;          // NCCLWATCH_KERNELS in full mode (kernel_filter_code)
  uint32_t reserved_pad;
  uint64_t reserved[3];                // version 2 had in_flight_overflow here (now in losses)
  alignas(64) LossCounts losses;       // version 3
  alignas(64) DrainCheckpoint drain;   // version 5
  alignas(64) CaptureRequest capture;  // version 5
  alignas(64) InFlightSlot in_flight[kInFlightSlots];  // version 2
};
static_assert(sizeof(SegmentHeader) == 896 + 64 * kInFlightSlots);
static_assert(sizeof(SegmentHeader) % 64 == 0, "ring slots start cache-line aligned");

// Trace file: TraceHeader, then records back to back. The header is rewritten in place on close
// (and by `ncclwatch collect`), so a file whose header says state != closed was cut short.
inline constexpr uint32_t kTraceStateOpen = 1;
inline constexpr uint32_t kTraceStateClosed = 2;
inline constexpr uint32_t kTraceStateSalvaged = 3;

struct TraceHeader {
  uint64_t magic;           // kTraceMagic
  uint32_t layout_version;  // kLayoutVersion
  uint32_t header_size;     // sizeof(TraceHeader)
  uint32_t record_size;     // kRecordSize
  uint32_t state;           // kTraceState*
  ProcessInfo process;
  uint64_t records;  // records after the header when closed (0 while open)
  uint64_t dropped;  // ring drops
  uint64_t cupti_dropped;
  uint32_t mode;           // as SegmentHeader::mode
  uint32_t kernel_filter;  // as SegmentHeader::kernel_filter; zero (reserved) in older writers
  LossCounts losses;       // version 3; zero (then reserved) in versions 1 and 2
};
static_assert(sizeof(TraceHeader) == 320);
static_assert(offsetof(TraceHeader, losses) == 256, "losses fill what versions 1-2 reserved");
static_assert(std::is_trivially_copyable_v<TraceHeader>);

// A header of this layout (magic, version, sizes) in `state` for `process`; counts are zero
// until the writer (or salvage) that closes the file fills them in.
constexpr TraceHeader trace_header(uint32_t state, const ProcessInfo& process) noexcept {
  TraceHeader h{};
  h.magic = kTraceMagic;
  h.layout_version = kLayoutVersion;
  h.header_size = sizeof(TraceHeader);
  h.record_size = kRecordSize;
  h.state = state;
  h.process = process;
  return h;
}

// Size in bytes of one element of an ncclDataType_t; 0 for unknown values.
constexpr uint32_t datatype_size(uint8_t datatype) {
  switch (datatype) {
    case 0:
    case 1:
    case 10:
    case 11:
      return 1;  // int8, uint8, fp8 e4m3, fp8 e5m2
    case 2:
    case 3:
    case 7:
      return 4;  // int32, uint32, float32
    case 4:
    case 5:
    case 8:
      return 8;  // int64, uint64, float64
    case 6:
    case 9:
      return 2;  // float16, bfloat16
    default:
      return 0;
  }
}

// Bytes this rank passes to NCCL for a call (count x element size; for AllGather the count is
// per rank, for ReduceScatter the received count, exactly as NCCL's own API defines them).
constexpr uint64_t call_bytes(const CallRecord& r) {
  return r.count * datatype_size(r.datatype);
}

}  // namespace ncclwatch::format

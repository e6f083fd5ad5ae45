#include "trace/record_check.h"

#include <initializer_list>

namespace ncclwatch::trace {
namespace {

using format::Func;
using format::RecordKind;

// Ten years of nanoseconds: no interval of one process is longer, so anything longer is garbage.
constexpr int64_t kMaxSpanNs = int64_t{10} * 365 * 24 * 3600 * 1'000'000'000;

// Clock readings beyond 2^62 ns (146 years of CLOCK_MONOTONIC, year 2116 of CLOCK_REALTIME) come
// from damaged files only. Rejecting them here keeps every sum and difference of two times in
// int64 for the analyses downstream.
constexpr int64_t kMaxTimeNs = int64_t{1} << 62;

// A time pair is usable if both ends are non-negative, plausible and ordered, and the span is
// plausible.
const char* check_span(int64_t begin, int64_t end, const char* reversed) {
  if (begin < 0 || end < 0) return "negative timestamp";
  if (begin > kMaxTimeNs || end > kMaxTimeNs) return "implausible timestamp (beyond 2^62 ns)";
  if (end < begin) return reversed;
  if (end - begin > kMaxSpanNs) return "interval longer than ten years";
  return nullptr;
}

const char* check_call(const format::CallRecord& r) {
  const auto func = static_cast<Func>(r.prefix.u8a);
  if (!format::is_collective(func) && !format::is_p2p(func)) return "call with a non-call func";
  if (r.peer < -1) return "call with peer below -1";
  if (format::is_p2p(func) && r.peer < 0) return "send/recv without a peer";
  return check_span(r.t_enter_ns, r.t_exit_ns, "call exits before it enters");
}

const char* check_comm(const format::CommRecord& r) {
  const auto func = r.prefix.u8a;
  if (func < static_cast<uint8_t>(Func::kCommInitRank) ||
      func > static_cast<uint8_t>(Func::kCommShrink))
    return "comm record with a non-init func";
  // Failed inits and NOCOLOR splits create no comm (id 0); their sizes may be anything.
  if (r.prefix.u8b == 0 && r.comm_id != 0) {
    if (r.nranks <= 0) return "comm with nranks <= 0";
    if (r.rank < 0 || r.rank >= r.nranks) return "comm rank outside [0, nranks)";
  }
  return check_span(r.t_enter_ns, r.t_exit_ns, "comm init exits before it enters");
}

const char* check_identity(const format::IdentityRecord& r) {
  if (r.rank < -1 || r.world_size < -1 || r.local_rank < -1 || r.device < -1)
    return "identity with a value below -1";
  if (r.world_size == 0) return "identity with world size 0";
  if (r.rank >= 0 && r.world_size > 0 && r.rank >= r.world_size) return "rank >= world size";
  return nullptr;
}

const char* check_string(const format::StringRecord& r) {
  if (r.prefix.tid == 0) return "string with id 0";
  if (r.prefix.u8a >= format::kMaxStringChunks) return "string chunk index too large";
  return nullptr;
}

// A time that may be 0 ("not measured") or else plausible, and not before `not_before`.
const char* check_optional_time(int64_t t, int64_t not_before) {
  if (t == 0) return nullptr;
  if (t < 0) return "negative timestamp";
  if (t > kMaxTimeNs) return "implausible timestamp (beyond 2^62 ns)";
  if (t < not_before) return "step event before the step starts";
  return nullptr;
}

const char* check_step(const format::StepRecord& r) {
  if (r.prefix.u8a >= static_cast<uint8_t>(format::StepSource::kCount))
    return "step with an unknown source";
  if (r.prefix.u8b >= static_cast<uint8_t>(format::StepTiming::kCount))
    return "step with an unknown timing source";
  const int64_t end = r.start_ns + int64_t{r.duration_us} * 1000;
  if (const char* p = check_span(r.start_ns, end, "step ends before it starts")) return p;
  if (const char* p = check_optional_time(r.arrive_ns, r.start_ns)) return p;
  // The GPU end of the first collective comes after its host entry (when both are known).
  if (const char* p = check_optional_time(r.sync_ns, r.arrive_ns)) return p;
  for (uint32_t figure : {r.compute_us, r.exposed_us, r.idle_us}) {
    if (figure != format::kStepUnknownUs && figure > r.duration_us)
      return "step figure longer than the step";
  }
  return nullptr;
}

const char* check_window(const format::WindowRecord& r) {
  if (r.prefix.u8a >= static_cast<uint8_t>(format::WindowTrigger::kCount))
    return "window with an unknown trigger";
  if (r.prefix.u8b == static_cast<uint8_t>(format::WindowEvent::kOpen)) {
    if (r.start_ns < 0 || r.start_ns > kMaxTimeNs) return "implausible window start";
    return nullptr;
  }
  if (r.prefix.u8b != static_cast<uint8_t>(format::WindowEvent::kClose))
    return "window event neither open nor close";
  if (r.first_step != format::kNoStep && r.end_step != format::kNoStep && r.end_step < r.first_step)
    return "window ends at a step before its first";
  return check_span(r.start_ns, r.end_ns, "window ends before it starts");
}

const char* check_gpu_timing(const format::GpuTimingRecord& r) {
  if (r.prefix.u8a > 1) return "GPU timing neither on nor off";
  if (r.prefix.u8b >= static_cast<uint8_t>(format::GpuTimingReason::kCount))
    return "GPU timing change with an unknown reason";
  if (r.t_ns < 0 || r.t_ns > kMaxTimeNs) return "implausible GPU timing change time";
  if (r.step_ns < 0 || r.step_ns > kMaxTimeNs) return "implausible measured step time";
  return nullptr;
}

}  // namespace

const char* record_problem(const format::Record& rec) noexcept {
  switch (static_cast<RecordKind>(rec.prefix.kind)) {
    case RecordKind::kCall:
      return check_call(rec.call);
    case RecordKind::kGroup: {
      const auto f = static_cast<Func>(rec.prefix.u8a);
      if (f != Func::kGroupStart && f != Func::kGroupEnd)
        return "group record with a non-group func";
      return check_span(rec.group.t_enter_ns, rec.group.t_exit_ns, "group exits before it enters");
    }
    case RecordKind::kComm:
      return check_comm(rec.comm);
    case RecordKind::kCommEnd: {
      const auto f = rec.prefix.u8a;
      if (f < static_cast<uint8_t>(Func::kCommFinalize) ||
          f > static_cast<uint8_t>(Func::kCommRevoke))
        return "comm end with a non-end func";
      return check_span(rec.comm_end.t_enter_ns, rec.comm_end.t_exit_ns,
                        "comm end exits before it enters");
    }
    case RecordKind::kIdentity:
      return check_identity(rec.identity);
    case RecordKind::kClock:
      if (rec.clock.monotonic_ns <= 0 || rec.clock.realtime_ns <= 0) return "clock anchor <= 0";
      if (rec.clock.monotonic_ns > kMaxTimeNs || rec.clock.realtime_ns > kMaxTimeNs)
        return "implausible timestamp (beyond 2^62 ns)";
      return nullptr;
    case RecordKind::kKernel:
      if (rec.prefix.u8a > static_cast<uint8_t>(format::ActivityKind::kMemset))
        return "unknown activity kind";
      return check_span(rec.kernel.start_ns, rec.kernel.end_ns, "kernel ends before it starts");
    case RecordKind::kString:
      return check_string(rec.string);
    case RecordKind::kKernelLink:
      if (rec.link.t_ns < 0) return "negative timestamp";
      if (rec.link.t_ns > kMaxTimeNs) return "implausible timestamp (beyond 2^62 ns)";
      return nullptr;
    case RecordKind::kCollGpu:
      return check_span(rec.coll_gpu.start_ns, rec.coll_gpu.end_ns,
                        "GPU interval ends before it starts");
    case RecordKind::kLaunch:
      return check_span(rec.launch.t_enter_ns, rec.launch.t_exit_ns,
                        "launch exits before it enters");
    case RecordKind::kNvtx:
      return check_span(rec.nvtx.start_ns, rec.nvtx.end_ns, "range ends before it starts");
    case RecordKind::kUniqueId:
      return check_span(rec.unique_id.t_enter_ns, rec.unique_id.t_exit_ns,
                        "get_unique_id exits before it enters");
    case RecordKind::kInFlight: {
      const auto& e = rec.in_flight.entry;
      if (e.func == 0 || e.func >= static_cast<uint8_t>(Func::kCount))
        return "in-flight record with an unknown func";
      if (rec.prefix.tid == 0) return "in-flight record without a thread";
      return check_span(e.t_enter_ns, rec.in_flight.t_seen_ns,
                        "in-flight call seen before it entered");
    }
    case RecordKind::kSched:
      if (rec.prefix.tid == 0) return "sched record without a thread";
      if (rec.sched.t_ns < 0) return "negative timestamp";
      if (rec.sched.t_ns > kMaxTimeNs || rec.sched.on_cpu_ns > uint64_t{kMaxTimeNs} ||
          rec.sched.wait_ns > uint64_t{kMaxTimeNs})
        return "implausible timestamp (beyond 2^62 ns)";
      return nullptr;
    case RecordKind::kStep:
      return check_step(rec.step);
    case RecordKind::kWindow:
      return check_window(rec.window);
    case RecordKind::kGpuTiming:
      return check_gpu_timing(rec.gpu_timing);
    case RecordKind::kInvalid:
      return "all-zero record kind (never written)";
    case RecordKind::kCount:
      break;
  }
  return "unknown record kind";
}

}  // namespace ncclwatch::trace

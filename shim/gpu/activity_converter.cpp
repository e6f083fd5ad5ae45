#include "activity_converter.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

namespace ncclwatch::shim::gpu {

using format::ActivityKind;
using format::Record;
using format::RecordKind;

ActivityConverter::ActivityConverter(RecordSink sink, const ClockConverter& clock,
                                     KernelFilter filter)
    : sink_(sink),
      clock_(clock),
      filter_(filter),
      strings_(sink),
      open_(new OpenRange[kOpenRanges]()) {}

void ActivityConverter::put(const Record& r) noexcept {
  sink_(r);
  ++stats_.emitted;
}

void ActivityConverter::convert_buffer(NextRecordFn next, uint8_t* buffer, size_t valid) noexcept {
  if (buffer == nullptr || valid == 0) return;
  CUpti_Activity* rec = nullptr;
  while (next(buffer, valid, &rec) == CUPTI_SUCCESS && rec != nullptr) convert(rec);
}

void ActivityConverter::convert(const CUpti_Activity* a) noexcept {
  ++stats_.activities;
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(a));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      copy_record(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(a), ActivityKind::kMemcpy);
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      copy_record(*reinterpret_cast<const CUpti_ActivityMemset4*>(a), ActivityKind::kMemset);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      api(*reinterpret_cast<const CUpti_ActivityAPI*>(a), true);
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      api(*reinterpret_cast<const CUpti_ActivityAPI*>(a), false);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      marker(*reinterpret_cast<const CUpti_ActivityMarker2*>(a));
      break;
    default:
      ++stats_.unknown;
      break;
  }
}

// GPU timestamps; false (record dropped and counted) when CUPTI returned zeros, the CUDA
// 12.6u2-13.0 bug with a registered timestamp callback.
bool ActivityConverter::gpu_time(uint64_t start, uint64_t end, int64_t& s, int64_t& e) noexcept {
  if (start == 0 && end == 0) {
    ++stats_.zero_timestamps;
    return false;
  }
  s = clock_.to_host(start);
  e = clock_.to_host(end < start ? start : end);
  return true;
}

void ActivityConverter::kernel(const CUpti_ActivityKernel10& k) noexcept {
  int64_t s = 0, e = 0;
  if (!gpu_time(k.start, k.end, s, e)) return;
  bool nccl = is_nccl_kernel_name(k.name);
  if (!filter_.keep(nccl, s)) {
    ++stats_.filtered;
    return;
  }
  Record r{};
  auto& o = r.kernel;
  o.prefix.kind = RecordKind::kKernel;
  o.prefix.flags = static_cast<uint8_t>((nccl ? format::kKernelIsNccl : 0) |
                                        (k.graphId != 0 ? format::kKernelFromGraph : 0));
  o.prefix.u8a = static_cast<uint8_t>(ActivityKind::kKernel);
  o.prefix.u8b = static_cast<uint8_t>(k.deviceId);
  o.prefix.tid = k.streamId;
  o.start_ns = s;
  o.end_ns = e;
  o.correlation = k.correlationId;
  o.name_id = strings_.intern_stable(k.name);
  o.graph_node_id = k.graphNodeId;
  o.graph_id = k.graphId;
  o.context_id = k.contextId;
  put(r);
}

// Memcpy and memset records share every field the format keeps; only the activity kind differs.
template <typename Copy>
void ActivityConverter::copy_record(const Copy& m, ActivityKind kind) noexcept {
  int64_t s = 0, e = 0;
  if (!gpu_time(m.start, m.end, s, e)) return;
  if (!filter_.keep(false, s)) {
    ++stats_.filtered;
    return;
  }
  Record r{};
  auto& o = r.kernel;
  o.prefix.kind = RecordKind::kKernel;
  o.prefix.flags = m.graphId != 0 ? format::kKernelFromGraph : 0;
  o.prefix.u8a = static_cast<uint8_t>(kind);
  o.prefix.u8b = static_cast<uint8_t>(m.deviceId);
  o.prefix.tid = m.streamId;
  o.start_ns = s;
  o.end_ns = e;
  o.correlation = m.correlationId;
  o.graph_node_id = m.graphNodeId;
  o.graph_id = m.graphId;
  o.context_id = m.contextId;
  o.bytes = m.bytes;
  put(r);
}

void ActivityConverter::api(const CUpti_ActivityAPI& a, bool driver) noexcept {
  format::LaunchApi kind = format::LaunchApi::kOther;
  if (driver) {
    switch (a.cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
        kind = format::LaunchApi::kDriverGraph;
        break;
      default:
        kind = format::LaunchApi::kDriverKernel;
        break;
    }
  } else {
    switch (a.cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
        kind = format::LaunchApi::kRuntimeGraph;
        break;
      default:
        kind = format::LaunchApi::kRuntimeKernel;
        break;
    }
  }
  Record r{};
  auto& o = r.launch;
  o.prefix.kind = RecordKind::kLaunch;
  o.prefix.u8a = static_cast<uint8_t>(kind);
  o.prefix.tid = a.threadId;
  o.t_enter_ns = clock_.to_host(a.start);
  o.t_exit_ns = clock_.to_host(a.end < a.start ? a.start : a.end);
  o.correlation = a.correlationId;
  put(r);
}

void ActivityConverter::marker(const CUpti_ActivityMarker2& m) noexcept {
  const int64_t t = clock_.to_host(m.timestamp);
  const uint32_t tid = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m.objectId.pt.threadId : 0;
  OpenRange& slot = open_[m.id & (kOpenRanges - 1)];
  auto emit_range = [&](int64_t start, uint32_t name_id, uint32_t domain_id, uint32_t thread) {
    Record r{};
    r.nvtx.prefix.kind = RecordKind::kNvtx;
    r.nvtx.prefix.u8a = 0xff;
    r.nvtx.prefix.tid = thread;
    r.nvtx.start_ns = start;
    r.nvtx.end_ns = t;
    r.nvtx.name_id = name_id;
    r.nvtx.domain_id = domain_id;
    put(r);
  };
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    emit_range(t, strings_.intern(m.name), strings_.intern(m.domain), tid);
  } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    // A range still open in this slot after 1024 newer ones is lost (counted as unknown).
    if (slot.id != 0) ++stats_.unknown;
    slot = {m.id, strings_.intern(m.name), strings_.intern(m.domain), tid, t};
  } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    if (slot.id == m.id) {
      emit_range(slot.start_ns, slot.name_id, slot.domain_id, slot.tid);
      slot = {};
    } else {
      // The end of a range that began before tracing did (NCCL's or the application's range
      // open when CUPTI was enabled): nothing was recorded of it, so nothing of it is lost.
      ++stats_.unmatched_ends;
    }
  }
}

}  // namespace ncclwatch::shim::gpu

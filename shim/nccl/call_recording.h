// Shared recording logic of the hooks: for collectives and point-to-point calls one CallRecord
// around the real call, its entry evidence (mark_entered) before it, the in-flight call set for
// the CUPTI side, and the CallObserver notified; for the other hooked calls (groups,
// communicators, unique ids) the start their records share.
#pragma once

#include <nccl.h>

#include "nccl/comm_registry.h"
#include "nccl/group_state.h"
#include "record/recorder.h"
#include "record/recorder_control.h"

namespace ncclwatch::shim {

struct CallArgs {
  format::Func func;
  ncclComm_t comm;
  size_t count;
  ncclDataType_t datatype;
  int redop;  // -1 if none
  int peer;   // root or peer, -1 if none
  cudaStream_t stream;
};

// Fills what every non-collective call record (GroupRecord, CommRecord, CommEndRecord,
// UniqueIdRecord) starts with: the kind, who called what, NCCL's result, and the host span from
// `t_enter_ns` to now. Call it right after the real call returned.
template <typename ApiRecord>
void stamp_api_call(ApiRecord& r, format::RecordKind kind, format::Func func, ncclResult_t result,
                    int64_t t_enter_ns) noexcept {
  r.prefix.kind = kind;
  r.prefix.u8a = static_cast<uint8_t>(func);
  r.prefix.u8b = static_cast<uint8_t>(static_cast<int8_t>(result));
  r.prefix.tid = thread_id();
  r.t_enter_ns = t_enter_ns;
  r.t_exit_ns = now_ns();
}

inline uint8_t redop_code(int op) {
  if (op < 0) return 0;
  return op < static_cast<int>(ncclNumOps) ? static_cast<uint8_t>(op) : 255;
}

template <typename RealCall>
ncclResult_t record_call(const CallArgs& a, RealCall&& real) noexcept {
  if (!ensure_recorder()) return real();
  format::Record rec{};
  format::CallRecord& c = rec.call;
  c.t_enter_ns = now_ns();
  c.prefix.kind = format::RecordKind::kCall;
  c.prefix.u8a = static_cast<uint8_t>(a.func);
  c.prefix.tid = thread_id();
  CommInfo* info = CommRegistry::instance().find(a.comm);
  if (info != nullptr) {
    c.comm_id = info->id;
    if (format::is_p2p(a.func)) {
      auto* counters = a.func == format::Func::kSend ? info->send_seq.get() : info->recv_seq.get();
      if (counters != nullptr && a.peer >= 0 && a.peer < info->nranks) {
        c.seq = counters[a.peer].fetch_add(1, std::memory_order_relaxed);
      }
    } else {
      c.seq = info->coll_seq.fetch_add(1, std::memory_order_relaxed);
    }
    if (info->non_blocking) c.prefix.flags |= format::kCallNonBlocking;
    if (info->nranks == 1) c.prefix.flags |= format::kCallNoKernel;
  }
  GroupState& g = thread_group_state();
  if (g.depth > 0) c.prefix.flags |= format::kCallInGroup;
  c.group_id = g.group_id;
  c.group_depth = static_cast<uint8_t>(g.depth > 255 ? 255 : g.depth);
  c.count = a.count;
  c.stream = reinterpret_cast<uint64_t>(a.stream);
  c.peer = a.peer;
  c.datatype = static_cast<uint8_t>(a.datatype);
  c.redop = redop_code(a.redop);

  InFlightCall& f = mutable_in_flight_call();
  f.active = true;
  f.func = a.func;
  f.comm_id = c.comm_id;
  f.stream = c.stream;
  f.seq = c.seq;
  f.group_id = c.group_id;
  f.group_depth = g.depth;
  mark_entered({c.t_enter_ns, c.comm_id, c.count, c.stream, c.seq, c.group_id, c.peer,
                static_cast<uint8_t>(a.func), c.prefix.flags, c.datatype, c.redop});
  CallObserver* observer = call_observer();
  if (observer != nullptr) observer->before_call(f);
  ncclResult_t result = real();
  if (observer != nullptr) observer->after_call(f, static_cast<int>(result));
  mark_returned();
  f.active = false;
  c.t_exit_ns = now_ns();
  c.prefix.u8b = static_cast<uint8_t>(static_cast<int8_t>(result));
  emit(rec);
  return result;
}

}  // namespace ncclwatch::shim

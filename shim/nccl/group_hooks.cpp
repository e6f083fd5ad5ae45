// Hooks of ncclGroupStart / ncclGroupEnd: per-thread nesting and outermost group ids.
#include <atomic>

#include "nccl/call_recording.h"
#include "nccl/group_state.h"
#include "nccl/hooks.h"
#include "record/recorder.h"
#include "record/recorder_control.h"

namespace ncclwatch::shim {
namespace {

std::atomic<uint32_t> g_next_group{1};
thread_local GroupState t_group;

format::Record group_record(format::Func func, int64_t t_enter, ncclResult_t result,
                            uint32_t group_id, uint32_t depth) {
  format::Record rec{};
  stamp_api_call(rec.group, format::RecordKind::kGroup, func, result, t_enter);
  rec.group.group_id = group_id;
  rec.group.depth = depth;
  return rec;
}

format::CallEntry group_entry(format::Func func, int64_t t_enter, uint32_t group_id) {
  format::CallEntry e{};
  e.t_enter_ns = t_enter;
  e.group_id = group_id;
  e.peer = -1;
  e.func = static_cast<uint8_t>(func);
  return e;
}

}  // namespace

GroupState& thread_group_state() noexcept {
  return t_group;
}
uint32_t next_group_id() noexcept {
  return g_next_group.fetch_add(1, std::memory_order_relaxed);
}

ncclResult_t hookGroupStart() {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  mark_entered(group_entry(format::Func::kGroupStart, t_enter, t_group.group_id));
  ncclResult_t result = realGroupStart()();
  mark_returned();
  if (result == ncclSuccess) {
    if (t_group.depth == 0) t_group.group_id = next_group_id();
    ++t_group.depth;
  }
  if (on)
    emit(group_record(format::Func::kGroupStart, t_enter, result, t_group.group_id, t_group.depth));
  return result;
}

ncclResult_t hookGroupEnd() {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  uint32_t group_id = t_group.group_id;
  uint32_t depth = t_group.depth;
  InFlightCall& f = mutable_in_flight_call();
  f = InFlightCall{};
  f.active = true;
  f.func = format::Func::kGroupEnd;
  f.group_id = group_id;
  f.group_depth = depth;
  mark_entered(group_entry(format::Func::kGroupEnd, t_enter, group_id));
  CallObserver* observer = on ? call_observer() : nullptr;
  if (observer != nullptr) observer->before_call(f);
  ncclResult_t result = realGroupEnd()();
  if (observer != nullptr) observer->after_call(f, static_cast<int>(result));
  mark_returned();
  f.active = false;
  // NCCL leaves the group even when GroupEnd reports an error (except for a GroupEnd without
  // GroupStart, where there is nothing to leave).
  if (t_group.depth > 0) {
    --t_group.depth;
    if (t_group.depth == 0) t_group.group_id = 0;
  }
  if (on) emit(group_record(format::Func::kGroupEnd, t_enter, result, group_id, depth));
  return result;
}

}  // namespace ncclwatch::shim

// The shim's one small recording API (heaptrack's habit): everything that records -- the NCCL
// wrappers, the CUPTI worker, lite mode -- goes through these functions, and tests call them
// directly, without LD_PRELOAD.
//
// Hot-path functions (emit, now_ns, thread_id, in_flight_call) never allocate, lock or make a
// syscall beyond the vDSO clock. Everything else may, and runs off the hot path.
#pragma once

#include <cstdint>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

// Host clock: CLOCK_MONOTONIC in ns (see format.h for why).
int64_t now_ns() noexcept;

// gettid() of the calling thread, cached in a thread_local after the first call.
uint32_t thread_id() noexcept;

// Creates the segment, trace file and drain thread on first use (first NCCL call). Returns
// false if recording is off (NCCLWATCH=off, creation failed, forked child before re-init).
// Not for the hot path the first time; afterwards one relaxed load.
bool ensure_recorder() noexcept;

// True once a recorder exists and is recording. One relaxed load.
bool recording() noexcept;

// Appends one record to the ring. Never blocks: when the ring is full the record is dropped and
// counted. Returns false if dropped or not recording.
bool emit(const format::Record& record) noexcept;

// Entry evidence (format.h, InFlightSlot): every hook calls mark_entered before the real function
// runs and mark_returned after it, so a call that never returns is visible in the segment
// (`ncclwatch status`, salvage) and, after a second, in the trace file. Hot path: a few plain
// stores into the calling thread's slot (claimed once per thread); nothing when not recording.
// entry.t_enter_ns must equal the t_enter_ns of the record written on return.
void mark_entered(const format::CallEntry& entry) noexcept;
void mark_returned() noexcept;

// Header counters and mode. add_loss is one relaxed atomic add into the segment (format.h,
// LossCounts), cheap enough for the hot path's rare give-up branches (lite mode out of slots).
void add_cupti_dropped(uint64_t n) noexcept;
void add_loss(uint64_t format::LossCounts::*counter, uint64_t n = 1) noexcept;
void set_timing_mode(uint32_t mode) noexcept;    // SegmentHeader::mode values
void set_kernel_filter(uint32_t code) noexcept;  // format::kernel_filter_code

// The NCCL call the calling thread is inside right now (set by the wrappers for the duration of
// the real call; for ncclGroupEnd func == kGroupEnd and comm_id == 0). CUPTI launch callbacks
// read it to tie a kernel launch to its call.
struct InFlightCall {
  bool active = false;
  format::Func func = format::Func::kUnknown;
  uint64_t comm_id = 0;
  uint64_t stream = 0;
  uint32_t seq = 0;
  uint32_t group_id = 0;
  uint32_t group_depth = 0;
};
const InFlightCall& in_flight_call() noexcept;

// Observer of NCCL calls, installed by the GPU-timeline part (lite mode records CUDA events
// around each collective or group on its stream). Called on the application's thread around
// the real call; must follow the hot-path rules. nullptr (the default) means none.
struct CallObserver {
  virtual ~CallObserver() = default;
  virtual void before_call(const InFlightCall& call) noexcept = 0;
  virtual void after_call(const InFlightCall& call, int result) noexcept = 0;
};
void set_call_observer(CallObserver* observer) noexcept;

}  // namespace ncclwatch::shim

// The switch between the drain thread, which decides when GPU timing should run
// (gpu_switch.h, NCCLWATCH_SUMMARY_GPU), and the GPU timeline, which obeys: lite mode's hot path
// reads it with one relaxed load before recording CUDA events; CUPTI's background thread reads it
// every 20 ms and enables or disables its activity kinds and launch callbacks, then publishes
// what it applied and when, so the drain thread knows which steps GPU timing covered. Lock-free;
// one writer each (the drain thread wants, the CUPTI thread applies).
#pragma once

#include <cstdint>

namespace ncclwatch::shim {

// Whether GPU timing should run now (true until the drain thread says otherwise).
bool gpu_timing_wanted() noexcept;
void set_gpu_timing_wanted(bool on) noexcept;

// What the CUPTI tracer applied last: `on` since host time `t_ns`; `serial` counts the changes
// (0: none applied yet, the state it started in).
struct GpuTimingApplied {
  bool on = true;
  int64_t t_ns = 0;
  uint64_t serial = 0;
};
void publish_gpu_timing_applied(bool on, int64_t t_ns) noexcept;
GpuTimingApplied gpu_timing_applied() noexcept;

}  // namespace ncclwatch::shim

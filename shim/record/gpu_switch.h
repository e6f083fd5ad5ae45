// GPU timing per window (docs/always-on.md, "GPU timing per window"; NCCLWATCH_SUMMARY_GPU).
// CUPTI's kernel activity costs a launch-bound job its per-kernel price whatever reaches the
// disk (on an H200 the always tier alone made a 2.9 ms step with ~80 kernels 33 % slower), so
// the drain thread decides when GPU timing runs, and the GPU timeline obeys (gpu_gate.h):
//  - on: throughout (the cost stays; the summaries keep their GPU figures);
//  - off: only inside capture windows, switched on kLeadNs of steps ahead of a window's first step
//    (its first kernels are launched before its first collective, where the window opens) and off
//    when it has closed (CUPTI then flushes its buffers); outside, step summaries are host-only
//    (step time, arrival, calls, bytes), their GPU figures unknown (StepRecord kStepGpuOff);
//  - auto (default): measured once, over kMeasureSteps steps with GPU timing after kWarmupSteps
//    (with the default schedule, inside the first window): units per step (kernels in full mode,
//    NCCL calls in lite mode) x the cost of one unit against the mean step time; above kLimitPpm
//    it is off, else on. The decision is written with its figures (GpuTimingRecord, reason kAuto)
//    so the report can say why the history has no GPU figures outside windows.
// NCCLWATCH_DETAIL=all (one window, the whole run) and host-only timing never switch.
// Every change GPU timing actually made is a GpuTimingRecord (always tier) with the time it took
// effect; steps not wholly inside an "on" span are summarized without GPU figures (covered()).
// Everything here runs on the drain thread (or in finish(), after it stopped).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>

#include "ncclwatch/format.h"
#include "record/settings.h"

namespace ncclwatch::shim {

// What the auto decision judges: `units` of GPU timing cost over `steps` steps that lasted
// `step_ns_total` together.
struct GpuCost {
  double units_per_step = 0;
  double step_ns = 0;       // mean step time
  double fraction = 0;      // units_per_step x unit_cost_ns / step_ns
  bool too_costly = false;  // fraction above the limit
};
GpuCost judge_gpu_cost(uint64_t units, uint64_t steps, int64_t step_ns_total, uint32_t unit_cost_ns,
                       uint32_t limit_ppm);

class GpuSwitch {
 public:
  // CUPTI's cost per kernel with kernel activity and the launch callbacks on: the H200 run
  // (README, "Always on, on the same GPU") slowed a GPU-bound 17.2 ms step with ~80 kernels by
  // 1.2 % (206 us: 2.6 us per kernel); the launch-bound 2.9 ms step paid more per kernel (+33 %:
  // each launch's cost delays the next launch), so 2 us is a floor, not an average.
  static constexpr uint32_t kCuptiKernelCostNs = 2'000;
  // Lite mode's two cudaEventRecord calls per collective (or group): an estimate (on the H200,
  // lite mode's cost stayed within the run-to-run noise on both steps).
  static constexpr uint32_t kLiteCallCostNs = 2'000;
  // The most GPU timing may cost outside windows: 0.5 % of the step (the always tier's target is
  // "no measurable slowdown"; runs of one job differ by more than that).
  static constexpr uint32_t kLimitPpm = 5'000;
  static constexpr uint32_t kWarmupSteps = 5;    // first steps: allocator, autotuning, caches
  static constexpr uint32_t kMeasureSteps = 20;  // then measured
  // GPU timing is switched on this long (in steps: at least one) ahead of a window's first step:
  // `ncclwatch capture` asks a second or more of steps ahead.
  static constexpr int64_t kLeadNs = 1'000'000'000;
  static constexpr std::size_t kMaxChanges = 256;  // changes remembered for covered()

  using Emit = std::function<void(const format::Record&)>;
  void start(SummaryGpu setting, bool detail_all, Emit emit);

  // Every step summary as it is made, with the kernel records placed in it and the kernels the
  // kernel filter has left out so far (full mode; NCCLWATCH_KERNELS), and the timing mode
  // (SegmentHeader::mode: 1 full, 2 lite).
  void observe_step(const format::StepRecord& step, uint32_t kernels, uint64_t filtered_total,
                    uint32_t mode);
  // Each drain period: whether a capture window is open or due within kLeadNs.
  void poll(int64_t now, uint32_t mode, bool detail_soon);
  // Whether GPU timing ran throughout [start, end).
  bool covered(int64_t start_ns, int64_t end_ns) const;

  bool decided() const { return decided_; }
  bool wants_gpu() const { return wanted_; }
  const GpuCost& cost() const { return cost_; }

 private:
  bool want(bool detail_soon) const;
  void changed(bool on, int64_t t_ns, uint32_t mode);
  void emit_record(bool on, int64_t t_ns, format::GpuTimingReason reason, uint32_t mode);

  SummaryGpu setting_ = SummaryGpu::kAuto;
  bool never_ = true;  // detail all, or not started: never switches
  Emit emit_;
  bool wanted_ = true;
  uint64_t applied_serial_ = 0;
  // The auto decision.
  bool decided_ = false;
  bool decision_recorded_ = false;
  bool first_off_recorded_ = false;
  int64_t last_poll_ns_ = 0;
  GpuCost cost_;
  uint32_t unit_cost_ns_ = 0;
  uint32_t seen_ = 0, measured_ = 0;
  uint64_t units_ = 0;
  int64_t step_ns_total_ = 0;
  uint64_t filtered_before_ = 0;
  // Changes in effect, oldest first (GPU timing ran from the start: on before the first).
  struct Change {
    int64_t t_ns;
    bool on;
  };
  std::deque<Change> changes_;
};

}  // namespace ncclwatch::shim

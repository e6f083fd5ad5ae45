#include "record/gpu_switch.h"

#include <cmath>

#include "record/gpu_gate.h"

namespace ncclwatch::shim {
namespace {

constexpr uint32_t kModeFull = 1;
constexpr uint32_t kModeLite = 2;

uint32_t saturate_u32(double v) {
  if (!(v > 0)) return 0;
  return v >= 4294967295.0 ? UINT32_MAX : static_cast<uint32_t>(std::lround(v));
}

}  // namespace

GpuCost judge_gpu_cost(uint64_t units, uint64_t steps, int64_t step_ns_total, uint32_t unit_cost_ns,
                       uint32_t limit_ppm) {
  GpuCost c;
  if (steps == 0 || step_ns_total <= 0) return c;
  c.units_per_step = static_cast<double>(units) / static_cast<double>(steps);
  c.step_ns = static_cast<double>(step_ns_total) / static_cast<double>(steps);
  c.fraction = c.units_per_step * unit_cost_ns / c.step_ns;
  c.too_costly = c.fraction * 1e6 > limit_ppm;
  return c;
}

void GpuSwitch::start(SummaryGpu setting, bool detail_all, Emit emit) {
  setting_ = setting;
  never_ = detail_all || setting == SummaryGpu::kOn;
  emit_ = std::move(emit);
  applied_serial_ = gpu_timing_applied().serial;  // changes before this recorder are not ours
}

void GpuSwitch::observe_step(const format::StepRecord& s, uint32_t kernels, uint64_t filtered_total,
                             uint32_t mode) {
  if (never_ || setting_ != SummaryGpu::kAuto || decided_) return;
  const auto timing = static_cast<format::StepTiming>(s.prefix.u8b);
  const bool timed = (mode == kModeFull && timing == format::StepTiming::kCupti) ||
                     (mode == kModeLite && timing == format::StepTiming::kEvents);
  constexpr uint8_t kNotWhole = format::kStepGpuPartial | format::kStepLast | format::kStepGpuOff;
  if (!timed || (s.prefix.flags & kNotWhole) != 0) return;
  if (++seen_ <= kWarmupSteps) {
    filtered_before_ = filtered_total;
    return;
  }
  ++measured_;
  units_ += mode == kModeFull ? kernels : s.calls;
  step_ns_total_ += int64_t{s.duration_us} * 1000;
  if (measured_ < kMeasureSteps) return;
  // Kernels the filter left out (NCCLWATCH_KERNELS=nccl|sampled:N) cost CUPTI as much.
  if (mode == kModeFull && filtered_total > filtered_before_)
    units_ += filtered_total - filtered_before_;
  unit_cost_ns_ = mode == kModeFull ? kCuptiKernelCostNs : kLiteCallCostNs;
  cost_ = judge_gpu_cost(units_, measured_, step_ns_total_, unit_cost_ns_, kLimitPpm);
  decided_ = true;
}

bool GpuSwitch::want(bool detail_soon) const {
  switch (setting_) {
    case SummaryGpu::kOn:
      return true;
    case SummaryGpu::kOff:
      return detail_soon;
    case SummaryGpu::kAuto:
      break;
  }
  return !decided_ || !cost_.too_costly || detail_soon;
}

void GpuSwitch::poll(int64_t now, uint32_t mode, bool detail_soon) {
  if (never_ || (mode != kModeFull && mode != kModeLite)) return;
  if (decided_ && !decision_recorded_ && !cost_.too_costly) {
    // Auto keeps it on: said once, with the figures.
    emit_record(true, now, format::GpuTimingReason::kAuto, mode);
    decision_recorded_ = true;
  }
  const bool w = want(detail_soon);
  if (w != wanted_) {
    wanted_ = w;
    set_gpu_timing_wanted(w);
    // Lite mode's hot path reads the switch at its next call: in effect now.
    if (mode == kModeLite) changed(w, now, mode);
  }
  if (mode == kModeFull) {
    // CUPTI's thread applies it within its 20 ms slice and says when.
    const GpuTimingApplied a = gpu_timing_applied();
    if (a.serial != applied_serial_) {
      // Changes this poll never saw (off and on again in between): uncovered since the last.
      if (a.serial > applied_serial_ + 1) changed(false, last_poll_ns_, mode);
      applied_serial_ = a.serial;
      changed(a.on, a.t_ns, mode);
    }
  }
  last_poll_ns_ = now;
}

void GpuSwitch::changed(bool on, int64_t t_ns, uint32_t mode) {
  const bool current = changes_.empty() || changes_.back().on;
  if (on == current) return;
  if (!changes_.empty()) t_ns = std::max(t_ns, changes_.back().t_ns);
  changes_.push_back({t_ns, on});
  if (changes_.size() > kMaxChanges) changes_.pop_front();
  format::GpuTimingReason reason = format::GpuTimingReason::kWindow;
  if (!on && !first_off_recorded_) {
    first_off_recorded_ = true;
    reason = setting_ == SummaryGpu::kAuto ? format::GpuTimingReason::kAuto
                                           : format::GpuTimingReason::kSetting;
    if (reason == format::GpuTimingReason::kAuto) decision_recorded_ = true;
  }
  emit_record(on, t_ns, reason, mode);
}

void GpuSwitch::emit_record(bool on, int64_t t_ns, format::GpuTimingReason reason, uint32_t mode) {
  if (!emit_) return;
  format::Record rec{};
  format::GpuTimingRecord& g = rec.gpu_timing;
  g.prefix.kind = format::RecordKind::kGpuTiming;
  g.prefix.u8a = on ? 1 : 0;
  g.prefix.u8b = static_cast<uint8_t>(reason);
  g.prefix.tid = mode;
  g.t_ns = t_ns;
  if (reason == format::GpuTimingReason::kAuto) {
    g.step_ns = static_cast<int64_t>(cost_.step_ns);
    g.units_per_step_x100 = saturate_u32(cost_.units_per_step * 100);
    g.unit_cost_ns = unit_cost_ns_;
    g.limit_ppm = kLimitPpm;
    g.measured_steps = measured_;
  }
  emit_(rec);
}

bool GpuSwitch::covered(int64_t start_ns, int64_t end_ns) const {
  // Changes alternate: before the oldest one remembered, the state was its opposite.
  bool on = changes_.empty() || !changes_.front().on;
  for (const Change& c : changes_) {
    if (c.t_ns <= start_ns) {
      on = c.on;
      continue;
    }
    if (c.t_ns < end_ns) return false;
    break;
  }
  return on;
}

}  // namespace ncclwatch::shim

// The drain thread's look at the in-flight slots: calls that stay in flight get an
// InFlightRecord into the ring (so the trace file shows them even if the process is later killed
// and never salvaged), and the watchdog (NCCLWATCH_HANG_S) says once per hang which call waits.
#pragma once

#include <cstdint>
#include <string>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

class Ring;

class InFlightMonitor {
 public:
  // A call in flight at least this long gets an InFlightRecord (once per call).
  static constexpr int64_t kReportAfterNs = 1'000'000'000;

  InFlightMonitor() = default;
  InFlightMonitor(format::SegmentHeader* header, Ring* ring, int hang_s)
      : header_(header), ring_(ring), hang_ns_(int64_t{hang_s} * 1'000'000'000) {}

  // One look at every slot at host time `now`: records calls in flight >= kReportAfterNs not yet
  // recorded. Returns true if the watchdog is due: the oldest call in flight is older than
  // NCCLWATCH_HANG_S and was not warned about yet; *line is then the one message to print.
  bool scan(int64_t now, std::string* line);

  // Every call in flight now, whatever its age (normal exit while a thread is still inside NCCL).
  void record_all(int64_t now, format::InFlightSource source);

 private:
  format::SegmentHeader* header_ = nullptr;
  Ring* ring_ = nullptr;
  int64_t hang_ns_ = 0;
  // Per slot: t_enter_ns of the call last recorded (a call is recorded once).
  int64_t recorded_[format::kInFlightSlots] = {};
  // The call the watchdog last warned about (tid, t_enter_ns).
  uint32_t warned_tid_ = 0;
  int64_t warned_enter_ns_ = -1;
};

}  // namespace ncclwatch::shim

// The returns of calls reported in flight. An InFlightRecord (always tier) says a call was still
// in flight a second after it was entered; the CallRecord or GroupRecord of its return is a
// detail kind, left out when no window is open. Without it a reader cannot tell the call
// returned, and takes it for a call that never did: a hang that was not (every collective a
// straggler held for a second, every slow checkpoint barrier). So the drain thread keeps the
// return of every call it saw reported, window or not: one record per call slower than a second.
// Drain thread only: no locks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

class InFlightReturns {
 public:
  // Calls reported and not yet seen returning: one per thread in NCCL at once, so the in-flight
  // slots bound them; the oldest is forgotten beyond that (its thread went on without a return
  // record: the ring dropped it).
  static constexpr std::size_t kCapacity = format::kInFlightSlots;

  // An InFlightRecord drained: its call's return is to be kept.
  void reported(const format::InFlightRecord& record);
  // Whether `record` is the return of a call reported (then forgotten): keep it.
  bool take(const format::Record& record);
  std::size_t size() const { return count_; }

 private:
  struct Call {
    uint32_t tid = 0;
    int64_t enter_ns = 0;
  };
  std::array<Call, kCapacity> calls_{};
  std::size_t next_ = 0, count_ = 0;
};

}  // namespace ncclwatch::shim

#include "record/in_flight_returns.h"

#include "record/recent_records.h"

namespace ncclwatch::shim {

void InFlightReturns::reported(const format::InFlightRecord& record) {
  // The drain and the watchdog may both report one call: remembered once.
  for (std::size_t i = 0; i < count_; ++i) {
    const Call& c = calls_[(next_ + kCapacity - count_ + i) % kCapacity];
    if (c.tid == record.prefix.tid && c.enter_ns == record.entry.t_enter_ns) return;
  }
  calls_[next_] = Call{record.prefix.tid, record.entry.t_enter_ns};
  next_ = (next_ + 1) % kCapacity;
  if (count_ < kCapacity) ++count_;
}

bool InFlightReturns::take(const format::Record& record) {
  if (count_ == 0) return false;
  for (std::size_t i = 0; i < count_; ++i) {
    const std::size_t at = (next_ + kCapacity - count_ + i) % kCapacity;
    if (!is_return_of(record, calls_[at].tid, calls_[at].enter_ns)) continue;
    // Forget it: move the oldest into its place.
    const std::size_t oldest = (next_ + kCapacity - count_) % kCapacity;
    calls_[at] = calls_[oldest];
    --count_;
    return true;
  }
  return false;
}

}  // namespace ncclwatch::shim

// The newest detail records the drain thread left out (no window was open), held in a fixed ring
// allocated once: a hang's window (CapturePlan::request, kCaptureRecent) starts with them, so it
// shows the seconds before the hang was seen, and the return of a call reported in flight just
// before it was drained is found here (in_flight_returns.h). Drain thread only: no locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

class RecentRecords {
 public:
  // capacity 0: nothing is held (detail for the whole run, or no windows at all).
  explicit RecentRecords(std::size_t capacity = 0) : ring_(capacity) {}

  // Holds a detail record (other kinds are ignored), dropping the oldest when full.
  void hold(const format::Record& record);
  std::size_t size() const { return count_; }
  std::size_t capacity() const { return ring_.size(); }
  // The earliest time a held record describes (CapturePlan::detail_time); INT64_MIN: none.
  int64_t oldest_time() const;
  // Every record held, oldest first; then none is held.
  template <class F>
  void take_all(F&& f) {
    for (std::size_t i = 0; i < count_; ++i) {
      const format::Record& r = at(i);
      if (r.prefix.kind != format::RecordKind::kInvalid) f(r);
    }
    count_ = 0;
  }
  // The return record (CallRecord or GroupRecord) of thread `tid`'s call entered at `enter_ns`,
  // taken out of the ring into *out; false if none is held.
  bool take_return(uint32_t tid, int64_t enter_ns, format::Record* out);

 private:
  format::Record& at(std::size_t i) {
    return ring_[(next_ + ring_.size() - count_ + i) % ring_.size()];
  }
  const format::Record& at(std::size_t i) const {
    return ring_[(next_ + ring_.size() - count_ + i) % ring_.size()];
  }

  std::vector<format::Record> ring_;
  std::size_t next_ = 0, count_ = 0;
};

// Whether `record` is the return of thread `tid`'s call entered at `enter_ns`: a CallRecord or
// GroupRecord of that thread with that entry time (one thread is in one hooked call at a time).
bool is_return_of(const format::Record& record, uint32_t tid, int64_t enter_ns);

}  // namespace ncclwatch::shim

// This host's clocks in nanoseconds, as the records have them (format.h: CLOCK_MONOTONIC, with
// CLOCK_REALTIME for wall time): what the collector compares with a record's time stamps (the
// age of a call in flight, the time a salvaged in-flight call was seen).
#pragma once

#include <time.h>

#include <cstdint>

namespace ncclwatch::trace {

inline int64_t clock_ns(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

inline int64_t monotonic_ns() {
  return clock_ns(CLOCK_MONOTONIC);
}

}  // namespace ncclwatch::trace

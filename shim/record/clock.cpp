#include "record/clock.h"

#include <time.h>

#include "record/recorder.h"

namespace ncclwatch::shim {
namespace {

int64_t read_ns(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Set once by the load-time constructor, before any thread exists; the hot path only adds it.
int64_t g_offset_ns = 0;

}  // namespace

void set_clock_test_offset_ns(int64_t offset_ns) noexcept {
  g_offset_ns = offset_ns;
}

int64_t clock_test_offset_ns() noexcept {
  return g_offset_ns;
}

int64_t now_ns() noexcept {
  return read_ns(CLOCK_MONOTONIC) + g_offset_ns;
}

ClockAnchor read_clock_anchor() noexcept {
  ClockAnchor best{};
  best.window_ns = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    int64_t before = read_ns(CLOCK_MONOTONIC);
    int64_t real = read_ns(CLOCK_REALTIME);
    int64_t after = read_ns(CLOCK_MONOTONIC);
    if (after - before < best.window_ns) {
      best.window_ns = after - before;
      best.monotonic_ns = before + (after - before) / 2 + g_offset_ns;
      best.realtime_ns = real + g_offset_ns;
    }
  }
  return best;
}

}  // namespace ncclwatch::shim

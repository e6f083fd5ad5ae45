// The shim's host clock (CLOCK_MONOTONIC, see format.h) and (monotonic, realtime) anchors.
//
// Testing-only hook: NCCLWATCH_TEST_CLOCK_OFFSET_NS=<int64> shifts now_ns() AND both halves of
// every anchor by that many ns, set once when the library loads (settings.h). It simulates a host
// whose clock is off so the collector's clock-alignment tests can run on one machine. Never set it
// in a job.
#pragma once

#include <cstdint>

namespace ncclwatch::shim {

struct ClockAnchor {
  int64_t monotonic_ns = 0;
  int64_t realtime_ns = 0;
  int64_t window_ns = 0;  // width of the read window: the anchor's uncertainty
};

// Reads monotonic/realtime back-to-back a few times and keeps the pair with the narrowest window.
ClockAnchor read_clock_anchor() noexcept;

// The test offset in effect (0 unless NCCLWATCH_TEST_CLOCK_OFFSET_NS is set).
int64_t clock_test_offset_ns() noexcept;

// Sets the test offset. Only the load-time constructor calls it (with the setting), before any
// thread exists: now_ns() reads it unsynchronized.
void set_clock_test_offset_ns(int64_t offset_ns) noexcept;

}  // namespace ncclwatch::shim

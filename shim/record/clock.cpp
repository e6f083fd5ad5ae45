#include "record/clock.h"

#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "record/recorder.h"

namespace ncclwatch::shim {
namespace {

int64_t read_ns(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t load_offset() noexcept {
  const char* text = std::getenv("NCCLWATCH_TEST_CLOCK_OFFSET_NS");
  if (text == nullptr || *text == '\0') return 0;
  int64_t value = 0;
  if (!parse_clock_offset(text, &value)) {
    std::fprintf(stderr, "ncclwatch: ignoring bad NCCLWATCH_TEST_CLOCK_OFFSET_NS=%s\n", text);
    return 0;
  }
  return value;
}

// Read once at load time so the hot path only adds a constant.
const int64_t g_offset_ns = load_offset();

}  // namespace

bool parse_clock_offset(const char* text, int64_t* out) noexcept {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return false;
  *out = value;
  return true;
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

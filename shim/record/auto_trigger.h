// Capture by itself (docs/always-on.md): the drain thread watches its own step summaries and
// asks for a window of the next N steps on every rank when the step time regressed against its
// running median (8 of the last kRecent steps slower than the median of up to kBaseline before
// them by 15 %, at least 1 ms, and at least kSpreads times the baseline's own spread), or the wait
// in the collectives (exposed communication) jumped as much without the step time following, or
// the hang watchdog fired -- at most once per
// cool-down and PER_DAY times a day (NCCLWATCH_AUTO_CAPTURE). Steps inside capture windows are
// left out of both medians: full detail slows a job by itself.
//
// A slow rank holds every rank back, so every rank sees the regression at about the same step.
// The words say what this rank saw: its own compute or GPU idle grew while its wait did not (it is
// the late one: the others wait for it), or its wait grew (it waits for a peer). A rank that only
// waits lets the late rank ask first (kDeferNs): the window then carries the late rank's words.
// Ranks that ask in the same cool-down period ask with the same id (a hash of the job and the
// period), so a rank applies the window once however many ask.
//
// Drain thread only (no locks); pure but for the clock values passed in.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "ncclwatch/capture_control.h"
#include "ncclwatch/format.h"
#include "record/settings.h"

namespace ncclwatch::shim {

class AutoTrigger {
 public:
  static constexpr std::size_t kRecent = 10;       // steps compared ...
  static constexpr std::size_t kBaseline = 200;    // ... against the median of these before them
  static constexpr std::size_t kMinBaseline = 50;  // no verdict before this many
  // A regression is sustained: kSustained of the last kRecent steps are slower by the threshold.
  static constexpr std::size_t kSustained = 8;
  static constexpr double kThreshold = 0.15;              // +15 % ...
  static constexpr int64_t kMinRegressionNs = 1'000'000;  // ... and at least 1 ms ...
  // ... and at least this many times the baseline's spread (median absolute deviation): the step
  // time's own noise (a busy host, a jittery input pipeline) is no regression.
  static constexpr int64_t kSpreads = 4;
  // A rank that only waits asks this long after it saw the regression, unless a window by itself
  // came meanwhile (the late rank's, through the control file, polled once a second).
  static constexpr int64_t kDeferNs = 3'000'000'000;
  // The window starts this many steps' time ahead: every rank must have read the control file
  // (once a second, on every node) before its first step.
  static constexpr int64_t kLeadNs = 3'000'000'000;
  // A hang window keeps the recent detail and stays open this long (what follows the hang).
  static constexpr int64_t kHangWindowNs = 10'000'000'000;

  AutoTrigger() = default;
  // `job` names the window ids; `realtime_offset_ns` = CLOCK_REALTIME - host clock.
  AutoTrigger(const AutoCapture& config, std::string job, int64_t realtime_offset_ns)
      : config_(config), job_(std::move(job)), realtime_offset_ns_(realtime_offset_ns) {}

  // Every step summary of this rank, in step order; `rank` for the words (-1: unknown), `now`
  // the host clock.
  void observe(const format::StepRecord& step, int32_t rank, int64_t now);
  // The window this rank asks for now, if any: a regression seen (a waiting rank's after
  // kDeferNs) while the cool-down and the daily budget allow one. `last_step` the newest step
  // started; the window's first step lies kLeadNs ahead at the regressed step time (`step_ns`
  // where that is unknown).
  std::optional<format::CaptureAsk> take(int64_t now, uint64_t last_step, int64_t step_ns);
  // The hang watchdog fired (`what`: its words): a window of the recent detail (kCaptureRecent),
  // if the cool-down and the daily budget allow one.
  std::optional<format::CaptureAsk> hang(const std::string& what, int64_t now);
  // A window by itself was applied here at `now` (this rank's or another's): the cool-down starts,
  // a waiting verdict is dropped, and the baseline starts over.
  void applied(int64_t now);
  bool allowed(int64_t now) const;
  bool pending() const { return pending_.has_value(); }

  static bool is_auto(format::WindowTrigger t) {
    return t == format::WindowTrigger::kStepTime || t == format::WindowTrigger::kWait ||
           t == format::WindowTrigger::kHang;
  }

 private:
  struct Sample {
    int64_t start_ns;
    int64_t duration_ns;
    int64_t compute_ns;  // -1: unknown (no GPU timing)
    int64_t exposed_ns;
    int64_t idle_ns;
  };
  struct Verdict {
    format::WindowTrigger trigger = format::WindowTrigger::kStepTime;
    std::string text;
    bool defer = false;
    int64_t seen_ns = 0;
    int64_t step_ns = 0;  // the recent median step time
  };
  std::optional<Verdict> judge(int32_t rank) const;
  int64_t median(std::size_t from, std::size_t to, int64_t Sample::*field) const;
  int64_t kth(std::size_t from, std::size_t to, std::size_t k, int64_t Sample::*field) const;
  int64_t spread(std::size_t to, int64_t base) const;
  uint64_t window_id(const char* kind, int64_t now) const;

  AutoCapture config_{.on = false};
  std::string job_;
  int64_t realtime_offset_ns_ = 0;
  std::deque<Sample> samples_;
  std::optional<Verdict> pending_;
  std::deque<int64_t> applied_at_;  // host clock, the last day's
};

// "03:12:05 UTC" for a CLOCK_REALTIME time (UTC: the local time zone would need the environment,
// which the shim does not read after load).
std::string utc_clock(int64_t realtime_ns);

}  // namespace ncclwatch::shim

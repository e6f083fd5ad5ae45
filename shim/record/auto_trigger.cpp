#include "record/auto_trigger.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "ncclwatch/fnv1a.h"

namespace ncclwatch::shim {
namespace {

constexpr int64_t kDayNs = 86'400LL * 1'000'000'000;

int64_t us_to_ns(uint32_t us) {
  return us == format::kStepUnknownUs ? -1 : int64_t{us} * 1000;
}

std::string ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string who(int32_t rank) {
  return rank >= 0 ? "rank " + std::to_string(rank) : std::string("this rank");
}

}  // namespace

std::string utc_clock(int64_t realtime_ns) {
  const auto seconds = static_cast<std::time_t>(realtime_ns / 1'000'000'000);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return "?";
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S UTC", &tm);
  return buf;
}

void AutoTrigger::observe(const format::StepRecord& s, int32_t rank, int64_t now) {
  if (!config_.on) return;
  // The last step (cut at exit) and steps in full detail (a window slows the job by itself) are
  // neither baseline nor regression.
  if ((s.prefix.flags & (format::kStepLast | format::kStepDetail)) != 0 || s.duration_us == 0)
    return;
  samples_.push_back({s.start_ns, int64_t{s.duration_us} * 1000, us_to_ns(s.compute_us),
                      us_to_ns(s.exposed_us), us_to_ns(s.idle_us)});
  if (samples_.size() > kBaseline + kRecent) samples_.pop_front();
  if (pending_) return;  // one verdict at a time
  if (auto v = judge(rank)) {
    v->seen_ns = now;
    pending_ = std::move(v);
    samples_.clear();  // the new level is the next baseline: one verdict per change
  }
}

// Median of `field` over samples [from, to), -1 when fewer than half of them know it.
int64_t AutoTrigger::median(std::size_t from, std::size_t to, int64_t Sample::*field) const {
  return kth(from, to, (to - from) / 2, field);
}

// The k-th smallest of `field` over samples [from, to) (k = 0: the smallest), -1 when fewer than
// half of them know it.
int64_t AutoTrigger::kth(std::size_t from, std::size_t to, std::size_t k,
                         int64_t Sample::*field) const {
  std::vector<int64_t> v;
  v.reserve(to - from);
  for (std::size_t i = from; i < to; ++i)
    if (samples_[i].*field >= 0) v.push_back(samples_[i].*field);
  if (v.empty() || v.size() * 2 < to - from) return -1;
  auto at = v.begin() + static_cast<std::ptrdiff_t>(std::min(k, v.size() - 1));
  std::nth_element(v.begin(), at, v.end());
  return *at;
}

// Half the samples' spread: the median absolute deviation of the baseline's step times.
int64_t AutoTrigger::spread(std::size_t to, int64_t base) const {
  std::vector<int64_t> d;
  d.reserve(to);
  for (std::size_t i = 0; i < to; ++i) d.push_back(std::abs(samples_[i].duration_ns - base));
  auto mid = d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2);
  std::nth_element(d.begin(), mid, d.end());
  return *mid;
}

std::optional<AutoTrigger::Verdict> AutoTrigger::judge(int32_t rank) const {
  const std::size_t n = samples_.size();
  if (n < kMinBaseline + kRecent) return std::nullopt;
  const std::size_t split = n - kRecent;
  const int64_t base = median(0, split, &Sample::duration_ns);
  // The level of the recent steps: what kSustained of them exceed (a burst of a few slow steps,
  // a busy machine's scheduling noise, is no regression).
  const int64_t recent = kth(split, n, kRecent - kSustained, &Sample::duration_ns);
  if (base <= 0 || recent <= 0) return std::nullopt;
  const int64_t threshold =
      std::max({kMinRegressionNs, static_cast<int64_t>(kThreshold * static_cast<double>(base)),
                kSpreads * spread(split, base)});
  const auto grew = [&](int64_t Sample::*field) {
    const int64_t b = median(0, split, field), r = kth(split, n, kRecent - kSustained, field);
    return b >= 0 && r >= 0 ? r - b : INT64_MIN;
  };
  const int64_t delta = recent - base, d_exposed = grew(&Sample::exposed_ns);
  const bool slower = delta >= threshold;
  const bool waits_more = d_exposed != INT64_MIN && d_exposed >= threshold;
  if (!slower && !waits_more) return std::nullopt;

  // Since when: the first recent step past the threshold.
  std::size_t since = split;
  for (std::size_t i = split; i < n; ++i) {
    if (samples_[i].duration_ns - base >= threshold || !slower) {
      since = i;
      break;
    }
  }
  // The figures, and who is late, from the regressed steps (`since` on), not from the k-th of
  // the recent steps that decided it: at the first moment 8 of the last 10 are past the
  // threshold, the k-th is a step from before the change, and a rank waiting for a late peer
  // showed hardly more wait there than before -- it said it was the late one, with the step of a
  // noisy pre-change step (tiers_test beside four busy loops: "+18%, 30.2 ms -> 35.6 ms; rank
  // 2: own step +5.4 ms, own wait 90.1 ms: the others wait for it" when the steps had gone from
  // 30 to 120 ms because rank 1 computed 4x longer).
  const auto grew_since = [&](int64_t Sample::*field) {
    const int64_t b = median(0, split, field), r = median(since, n, field);
    return b >= 0 && r >= 0 ? r - b : INT64_MIN;
  };
  const int64_t level = slower ? median(since, n, &Sample::duration_ns) : recent;
  const int64_t step_delta = slower ? level - base : delta;
  const int64_t exposed_delta = grew_since(&Sample::exposed_ns);
  Verdict v;
  v.step_ns = level;
  v.trigger = slower ? format::WindowTrigger::kStepTime : format::WindowTrigger::kWait;
  char head[160];
  if (slower) {
    std::snprintf(head, sizeof head, "step time +%.0f%% since %s (%s -> %s; ",
                  100.0 * static_cast<double>(step_delta) / static_cast<double>(base),
                  utc_clock(samples_[since].start_ns + realtime_offset_ns_).c_str(),
                  ms(base).c_str(), ms(level).c_str());
  } else {
    std::snprintf(head, sizeof head, "wait in the collectives +%s since %s (",
                  ms(exposed_delta).c_str(),
                  utc_clock(samples_[since].start_ns + realtime_offset_ns_).c_str());
  }
  v.text = head;
  const int64_t own_wait = median(since, n, &Sample::exposed_ns);
  if (exposed_delta == INT64_MIN) {
    v.text += "seen by " + who(rank) + ")";
  } else if (waits_more || 2 * exposed_delta >= step_delta) {
    // Its wait grew as much as its step: a peer is late.
    v.defer = true;
    v.text += who(rank) + ": own wait +" + ms(exposed_delta) + ": it waits for a peer)";
  } else {
    // Its own work grew while its wait did not: it is the late one.
    const int64_t d_compute = grew_since(&Sample::compute_ns);
    const int64_t d_idle = grew_since(&Sample::idle_ns);
    if (d_compute != INT64_MIN && d_compute >= d_idle && d_compute > 0) {
      v.text += who(rank) + ": compute +" + ms(d_compute);
    } else if (d_idle != INT64_MIN && d_idle > 0) {
      v.text += who(rank) + ": GPU idle +" + ms(d_idle) + " (a host-side stall)";
    } else {
      v.text += who(rank) + ": own step +" + ms(step_delta);
    }
    v.text += ", own wait " + ms(own_wait) + ": the others wait for it)";
  }
  return v;
}

bool AutoTrigger::allowed(int64_t now) const {
  if (!config_.on) return false;
  if (!applied_at_.empty() && now - applied_at_.back() < config_.cooldown_ns) return false;
  const auto today = std::count_if(applied_at_.begin(), applied_at_.end(),
                                   [&](int64_t t) { return now - t < kDayNs; });
  return static_cast<uint64_t>(today) < config_.per_day;
}

void AutoTrigger::applied(int64_t now) {
  applied_at_.push_back(now);
  while (!applied_at_.empty() && now - applied_at_.front() >= kDayNs) applied_at_.pop_front();
  pending_.reset();
  samples_.clear();
}

// The same on every rank that asks within one cool-down period (wall clock: the same on every
// host as far as NTP agrees).
uint64_t AutoTrigger::window_id(const char* kind, int64_t now) const {
  const int64_t period = (now + realtime_offset_ns_) / std::max<int64_t>(config_.cooldown_ns, 1);
  const std::string key = job_ + ":" + kind + ":" + std::to_string(period);
  const uint64_t h = format::fnv1a64(
      format::kFnv1aOffset, reinterpret_cast<const unsigned char*>(key.data()), key.size());
  return h == 0 ? 1 : h;
}

std::optional<format::CaptureAsk> AutoTrigger::take(int64_t now, uint64_t last_step,
                                                    int64_t step_ns) {
  if (!pending_ || last_step == format::kNoStep) return std::nullopt;
  if (pending_->defer && now < pending_->seen_ns + kDeferNs) return std::nullopt;
  Verdict v = std::move(*pending_);
  pending_.reset();
  if (!allowed(now)) return std::nullopt;  // within the cool-down or past the day's budget
  format::CaptureAsk ask;
  ask.id = window_id("auto", now);
  ask.unit = format::kCaptureSteps;
  if (v.step_ns > 0) step_ns = v.step_ns;
  const int64_t lead = step_ns > 0 ? (kLeadNs + step_ns - 1) / step_ns : 1;
  ask.first = last_step + static_cast<uint64_t>(std::clamp<int64_t>(lead, 2, 100'000));
  ask.count = config_.steps;
  ask.trigger = v.trigger;
  ask.requested_realtime_ns = now + realtime_offset_ns_;
  ask.text = std::move(v.text);
  return ask;
}

std::optional<format::CaptureAsk> AutoTrigger::hang(const std::string& what, int64_t now) {
  if (!allowed(now)) return std::nullopt;
  format::CaptureAsk ask;
  ask.id = window_id("hang", now);
  ask.unit = format::kCaptureRecent;
  ask.first = 0;
  ask.count = static_cast<uint64_t>(kHangWindowNs);
  ask.trigger = format::WindowTrigger::kHang;
  ask.requested_realtime_ns = now + realtime_offset_ns_;
  ask.text = what.substr(0, format::kMaxTriggerText);
  return ask;
}

}  // namespace ncclwatch::shim

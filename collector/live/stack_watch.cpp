#include "live/stack_watch.h"

namespace ncclwatch::live {

std::vector<StackTarget> StackWatch::due(const JobStatus& st, int64_t now_ns) {
  std::vector<StackTarget> out;
  std::map<std::pair<int64_t, std::string>, int64_t> seen;
  for (StackTarget& t : stack_targets(st, hang_after_)) {
    const auto key = std::make_pair(t.pid, t.hold);
    const auto it = first_seen_.find(key);
    const int64_t since = it != first_seen_.end() ? it->second : now_ns;
    seen[key] = since;
    // A host stall is due at once (its idle time is the watchdog's already); being behind on the
    // same call is a hang once it has lasted the watchdog's time without the comm moving on.
    const bool stalled = t.hold.starts_with("idle since");
    if (!stalled && now_ns - since < hang_after_.count()) continue;
    if (taken_.insert(key).second) out.push_back(std::move(t));
  }
  first_seen_ = std::move(seen);  // a hold that went away starts over if it comes back
  return out;
}

}  // namespace ncclwatch::live

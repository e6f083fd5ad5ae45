// `ncclwatch run`'s hang watchdog for Python stacks (docs/always-on.md, "Where a stuck rank is"):
// `run` is the job's parent, not part of it, so it may run py-spy where the shim may not (the
// shim never forks inside the application). Fed the live status every second or so, it says
// which ranks of this node to take the stack of now: those that hold the job up (stack_targets)
// and have held the same call up for the watchdog's time (NCCLWATCH_HANG_S) — once per hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "live/job_status.h"
#include "live/stack_taker.h"

namespace ncclwatch::live {

class StackWatch {
 public:
  explicit StackWatch(std::chrono::nanoseconds hang_after) : hang_after_(hang_after) {}

  // The targets due now (`now_ns`: this node's monotonic clock, as JobStatus::now_ns).
  std::vector<StackTarget> due(const JobStatus& st, int64_t now_ns);

 private:
  std::chrono::nanoseconds hang_after_;
  std::map<std::pair<int64_t, std::string>, int64_t> first_seen_;  // (pid, hold) -> when
  std::set<std::pair<int64_t, std::string>> taken_;
};

}  // namespace ncclwatch::live

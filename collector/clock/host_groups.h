// Ranks grouped by host: ranks on one host share CLOCK_MONOTONIC, so they share one offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/job_trace.h"

namespace ncclwatch::clock {

struct HostGroups {
  std::vector<std::string> names;      // hosts in order of their first rank (host 0 = reference)
  std::vector<uint32_t> host_of_rank;  // per JobTrace::ranks index
  std::vector<int64_t> wall_offset;    // per host: median of its ranks' wall offsets
  std::vector<bool> wall_known;        // per host: some rank had clock anchors
};

// A rank with no host name gets a host of its own ("?rank<index>"): nothing says it shares a clock.
HostGroups group_hosts(const model::JobTrace& job);

}  // namespace ncclwatch::clock

// Slow network links: a host whose NIC (or cable, or switch port) slows every cross-node
// communicator it is in. A slow link does not make anyone arrive late at the collectives that
// cross it — every member waits for the same slow transfer — so arrival statistics cannot see
// it; what it changes is the transfer: the time from the last member's arrival (kernel start)
// to the end of the collective. One communicator alone cannot say which of its hosts is slow
// (a ring is as slow as its slowest link); communicators over different host sets can: the
// slow host is the one whose communicators are all slow while those without it are not.
//
// Rule (stated in the report): per cross-node communicator, the median transfer time per byte
// over its GPU-timed instances of >= kLinkMinBytes (smaller ones are latency-bound); a host is
// a slow link when each of its cross-node communicators (>= 1) takes >= kLinkSlowdown x the
// median of the communicators without it (>= 1). Hosts in exactly the same communicators
// cannot be told apart: they are reported together. Host-only records have no transfers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/arrivals.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::analysis {

inline constexpr uint64_t kLinkMinBytes = 1ull << 20;
inline constexpr double kLinkSlowdown = 1.5;
inline constexpr std::size_t kLinkMinInstances = 3;  // per communicator, for its median

struct SlowLink {
  std::string host;
  std::vector<std::string> hosts_alike;  // in the same communicators: cannot be told apart
  double slowdown = 0;            // median per-byte transfer on its comms / on comms without it
  double transfer_ns = 0;         // median transfer of its comms' instances
  double others_transfer_ns = 0;  // ... of the comms without it
  std::vector<uint64_t> comms;    // its cross-node communicators (all slow)
  std::size_t comms_without = 0;
  // Filled by the straggler verdict: the ranks whose collectives cross this link (rank
  // indices; none of them a straggler), those of them that made peers wait >= the late
  // threshold per step (ranks), and the wait they all inflicted: the link's cost, measured as
  // a straggler's.
  std::vector<std::size_t> behind;
  std::vector<int32_t> late_ranks;
  std::vector<std::string> late_hosts;
  double cost_ns_per_step = 0;
  double cost_pct = 0;
  bool warning = false;

  static std::vector<SlowLink> find(const model::JobTrace& job, const model::MatchResult& match,
                                    const model::ClockAlignment& clocks, const Arrivals& arrivals);
};

}  // namespace ncclwatch::analysis

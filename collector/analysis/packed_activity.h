// A rank's activity (rank_activity.h) as its digest holds it from the load to the analyses: the
// sets packed (packed_interval_set.h), and busy kept as what it adds to comm ∪ compute (memcpy,
// memset) instead of a third copy of every kernel. unpack() gives back the RankActivity packed,
// set for set; clip() the same with every set clipped to one window.
#pragma once

#include <cstdint>

#include "analysis/packed_interval_set.h"
#include "analysis/rank_activity.h"

namespace ncclwatch::analysis {

struct PackedActivity {
  PackedIntervalSet comm;
  PackedIntervalSet compute;
  // busy = ((comm ∪ compute) − busy_missing) ∪ busy_extra, exactly:
  PackedIntervalSet busy_extra;    // busy − (comm ∪ compute)
  PackedIntervalSet busy_missing;  // (comm ∪ compute) − busy: empty from RankActivity::of
  CommSource source = CommSource::kNone;
  bool has_compute = false;
  int64_t first_ns = 0;
  int64_t last_ns = 0;

  static PackedActivity pack(const RankActivity& activity);
  RankActivity unpack() const;
  // unpack() with every set clipped to [from, to).
  RankActivity clip(int64_t from, int64_t to) const;
  std::size_t heap_bytes() const;

  bool operator==(const PackedActivity&) const = default;
};

// busy from its parts (PackedActivity's rule), for sets already unpacked.
IntervalSet busy_of(const IntervalSet& comm, const IntervalSet& compute, const IntervalSet& extra,
                    const IntervalSet& missing);

}  // namespace ncclwatch::analysis

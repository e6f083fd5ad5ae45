// Every rank's activity, for the analyses that go over the ranks (analyze.h): a rank's digest
// holds its activity packed (packed_activity.h) and it is unpacked here for one use at a time,
// so the job's sets stay packed while each analysis holds one rank's unpacked (one per worker).
// A rank without a digest (the whole load: its records are all in memory anyway) has its
// activity computed once and held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/rank_activity.h"
#include "model/job_trace.h"

namespace ncclwatch::analysis {

class RankActivities {
 public:
  // What the analyses ask of a rank's activity without its sets.
  struct Summary {
    CommSource source = CommSource::kNone;
    bool has_compute = false;
    int64_t first_ns = 0;  // RankActivity::first_ns, last_ns
    int64_t last_ns = 0;
    bool any_kernel = false;  // comm ∪ compute is not empty, and spans:
    int64_t kernels_begin = 0;
    int64_t kernels_end = 0;
    // Compute kernels or communication kernels timed on the GPU: a timeline to draw.
    bool has_kernel_timeline() const { return has_compute || source == CommSource::kNcclKernels; }
  };

  // Computes the activity of the ranks without a digest (`workers` threads).
  RankActivities(const model::JobTrace& job, unsigned workers);

  std::size_t size() const { return summaries_.size(); }
  const Summary& summary(std::size_t i) const { return summaries_[i]; }
  // Rank i's activity (held, or unpacked for the caller).
  std::shared_ptr<const RankActivity> at(std::size_t i) const;
  // Its compute set alone.
  std::shared_ptr<const IntervalSet> compute(std::size_t i) const;
  // at(i) with every set clipped to [from, to) (decodes only that window of a packed one).
  RankActivity clip(std::size_t i, int64_t from, int64_t to) const;

 private:
  const model::JobTrace* job_ = nullptr;
  std::vector<RankActivity> held_;  // by rank index; empty sets for ranks with a digest
  std::vector<Summary> summaries_;
};

}  // namespace ncclwatch::analysis

// The fold of history.h: one joined step at a time (every rank's summary of that step, or none),
// into sums per period that merge pairwise when the periods reach max_periods, so the periods
// always cover the whole run seen so far with between max/2 and max of them. Lateness needs the
// peers: a rank's arrival at the step's first collective against the median arrival, on clocks
// aligned per host by that collective's GPU end (sync_ns, a moment every rank shares), or, when
// later, how much less exposed communication it had than the median rank (its peers waited for
// it on the GPU while its host had run ahead).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "history/history.h"

namespace ncclwatch::history {

class PeriodFolder {
 public:
  // Per rank: the host index (ranks of one host share a clock) and the wall clock offset.
  PeriodFolder(std::vector<std::size_t> host_of, std::vector<int64_t> wall_offset_ns,
               std::size_t max_periods);

  // Step `number`; `steps[r]` is rank r's summary of it, nullptr where the rank has none.
  void add(uint64_t number, const std::vector<const format::StepRecord*>& steps);

  // Periods in step order (means, history.h).
  std::vector<Period> finish() const;

  std::size_t periods() const { return buckets_.size(); }
  bool clocks_from_sync() const { return clocks_from_sync_; }

 private:
  struct RankSums {
    double late = 0, compute = 0, idle = 0;
    uint32_t steps = 0, n_late = 0, n_compute = 0, n_idle = 0;
  };
  struct Sums {
    uint64_t first_step = 0, last_step = 0, steps = 0, detail_steps = 0;
    int64_t start = INT64_MAX, end = INT64_MIN;
    double step = 0, calls = 0, bytes = 0;
    double part[4] = {0, 0, 0, 0};  // compute, exposed (waiting taken out), waiting, idle
    uint64_t n_part[4] = {0, 0, 0, 0};
    std::vector<RankSums> ranks;
    void merge(const Sums& o);
  };

  Sums& bucket_for(uint64_t number);
  void align(const std::vector<const format::StepRecord*>& steps);
  bool add_lateness(const std::vector<const format::StepRecord*>& steps, Sums& into);

  std::vector<std::size_t> host_of_;
  std::vector<int64_t> wall_offset_;
  std::size_t max_;
  uint64_t width_ = 1;   // steps per period
  uint64_t joined_ = 0;  // steps added so far
  std::vector<Sums> buckets_;
  // Per host: ns to subtract from its wall times (follows the common GPU end of each step).
  std::vector<double> host_offset_;
  std::vector<bool> host_offset_known_;
  bool clocks_from_sync_ = false;
  std::vector<double> scratch_, scratch2_, parts_[3];
  std::vector<std::vector<double>> per_host_;
  std::vector<double> arrive_, exposed_;
};

}  // namespace ncclwatch::history

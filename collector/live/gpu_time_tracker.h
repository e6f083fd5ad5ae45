// GPU busy / compute / exposed-communication / idle seconds of one rank, computed incrementally
// from GPU intervals that arrive roughly in end order (CUPTI hands kernels over in buffers, up to
// a flush period late, interleaved across streams). Intervals are held until the newest end seen
// is `lag` past them, then the window up to that horizon is swept once and forgotten: memory is
// bounded by the intervals of one lag window, not by the length of the job. An interval that
// arrives after its window was swept only counts for its part after the horizon (late_intervals()
// says how often that happened; a larger lag would have caught them).
#pragma once

#include <cstdint>
#include <vector>

namespace ncclwatch::live {

class GpuTimeTracker {
 public:
  enum class Kind : uint8_t { kCompute, kComm, kOther };  // kOther: memcpy / memset

  explicit GpuTimeTracker(int64_t lag_ns = 1'500'000'000, std::size_t max_pending = 1u << 20);

  void add(int64_t start_ns, int64_t end_ns, Kind kind);
  // Sweeps every window that is now `lag` behind the newest end seen.
  void advance();
  // Sweeps everything held (the rank finished: nothing older can still arrive).
  void flush();

  double busy_s() const { return busy_ns_ * 1e-9; }
  double compute_s() const { return compute_ns_ * 1e-9; }
  double exposed_comm_s() const { return exposed_comm_ns_ * 1e-9; }
  double idle_s() const { return idle_ns_ * 1e-9; }
  uint64_t late_intervals() const { return late_; }
  std::size_t pending() const { return pending_.size(); }

 private:
  struct Interval {
    int64_t start, end;
    Kind kind;
  };
  void sweep(int64_t horizon);

  int64_t lag_ns_;
  std::size_t max_pending_;
  std::vector<Interval> pending_;
  std::vector<Interval> window_;     // scratch, kept to avoid reallocating each sweep
  int64_t swept_until_ = INT64_MIN;  // INT64_MIN: nothing swept yet
  int64_t max_end_ = INT64_MIN;
  int64_t busy_ns_ = 0, compute_ns_ = 0, exposed_comm_ns_ = 0, idle_ns_ = 0;
  uint64_t late_ = 0;
};

}  // namespace ncclwatch::live

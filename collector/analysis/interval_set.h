// Sorted, disjoint half-open intervals [begin, end) of nanoseconds: the arithmetic behind
// overlap (comm ∩ compute), exposed time (comm − compute) and idle time (window − busy).
//
// Invariant: intervals are sorted by begin, non-empty (end > begin) and neither overlap nor
// touch ([0,5) and [5,9) are stored as [0,9)), so length() is a plain sum and every binary
// operation is one linear merge.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ncclwatch::analysis {

struct Interval {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t length() const { return end > begin ? end - begin : 0; }
  bool operator==(const Interval&) const = default;
};

class IntervalSet {
 public:
  IntervalSet() = default;

  // Any intervals, in any order; empty and reversed ones (end <= begin) are dropped.
  static IntervalSet from_unsorted(std::vector<Interval> intervals);
  // Intervals already sorted by begin (kernels are): one pass, no sort.
  static IntervalSet from_sorted(const std::vector<Interval>& by_begin);

  // Appends an interval that starts at or after the begin of the last one appended (a
  // builder for sorted input that avoids a temporary vector). Inline: called once per kernel.
  void append_sorted(Interval interval) {
    if (interval.end <= interval.begin) return;
    if (!spans_.empty() && interval.begin <= spans_.back().end) {
      // Overlaps or touches the last one: extend it (a later begin never precedes it).
      spans_.back().end = std::max(spans_.back().end, interval.end);
      return;
    }
    spans_.push_back(interval);
  }

  IntervalSet unite(const IntervalSet& other) const;
  IntervalSet intersect(const IntervalSet& other) const;
  IntervalSet subtract(const IntervalSet& other) const;
  IntervalSet clip(int64_t from, int64_t to) const;

  int64_t length() const;
  // length() of clip(from, to), without building it.
  int64_t length_within(int64_t from, int64_t to) const;
  // |this ∩ [from, to)| for many windows in increasing order is cheaper through this cursor
  // form: `hint` is the index to start the search from and is advanced. Inline: called once
  // per collective by several analyses.
  int64_t length_within(int64_t from, int64_t to, std::size_t& hint) const {
    if (to <= from) return 0;
    while (hint < spans_.size() && spans_[hint].end <= from) ++hint;
    int64_t total = 0;
    for (std::size_t k = hint; k < spans_.size() && spans_[k].begin < to; ++k) {
      total += std::min(spans_[k].end, to) - std::max(spans_[k].begin, from);
    }
    return total;
  }

  bool empty() const { return spans_.empty(); }
  std::size_t size() const { return spans_.size(); }
  const std::vector<Interval>& spans() const { return spans_; }
  bool operator==(const IntervalSet&) const = default;

 private:
  std::vector<Interval> spans_;
};

}  // namespace ncclwatch::analysis

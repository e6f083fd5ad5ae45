#include "analysis/interval_set.h"

#include <algorithm>

namespace ncclwatch::analysis {

IntervalSet IntervalSet::from_unsorted(std::vector<Interval> intervals) {
  // Mostly sorted already (one rank's calls in time order): one check instead of a sort. The
  // union does not depend on the order among equal begins, so the result is the same.
  const auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
  if (!std::is_sorted(intervals.begin(), intervals.end(), by_begin))
    std::sort(intervals.begin(), intervals.end(), by_begin);
  return from_sorted(intervals);
}

IntervalSet IntervalSet::from_sorted(const std::vector<Interval>& by_begin) {
  IntervalSet out;
  out.spans_.reserve(by_begin.size());
  for (const Interval& iv : by_begin) out.append_sorted(iv);
  // Kernels back to back merge into a few spans: a set kept per rank (RankActivity, a rank's
  // digest) must not keep room for every kernel (36 bytes per kernel of a full-mode trace).
  if (out.spans_.capacity() > 2 * out.spans_.size() + 16) out.spans_.shrink_to_fit();
  return out;
}

IntervalSet IntervalSet::unite(const IntervalSet& other) const {
  IntervalSet out;
  out.spans_.reserve(spans_.size() + other.spans_.size());
  std::size_t i = 0, j = 0;
  while (i < spans_.size() || j < other.spans_.size()) {
    const bool take_mine =
        j == other.spans_.size() || (i < spans_.size() && spans_[i].begin <= other.spans_[j].begin);
    out.append_sorted(take_mine ? spans_[i++] : other.spans_[j++]);
  }
  return out;
}

IntervalSet IntervalSet::intersect(const IntervalSet& other) const {
  IntervalSet out;
  std::size_t i = 0, j = 0;
  while (i < spans_.size() && j < other.spans_.size()) {
    const Interval& a = spans_[i];
    const Interval& b = other.spans_[j];
    const int64_t lo = std::max(a.begin, b.begin);
    const int64_t hi = std::min(a.end, b.end);
    if (lo < hi)
      out.spans_.push_back({lo, hi});  // disjoint inputs give disjoint, non-touching output
    if (a.end < b.end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

IntervalSet IntervalSet::subtract(const IntervalSet& other) const {
  IntervalSet out;
  std::size_t j = 0;
  for (const Interval& a : spans_) {
    int64_t cursor = a.begin;
    while (j < other.spans_.size() && other.spans_[j].end <= cursor) ++j;
    std::size_t k = j;
    while (k < other.spans_.size() && other.spans_[k].begin < a.end) {
      const Interval& b = other.spans_[k];
      if (b.begin > cursor) out.spans_.push_back({cursor, b.begin});
      cursor = std::max(cursor, b.end);
      if (b.end > a.end) break;  // b reaches into the next span of ours: keep it for that one
      ++k;
    }
    j = k;
    if (cursor < a.end) out.spans_.push_back({cursor, a.end});
  }
  return out;
}

IntervalSet IntervalSet::clip(int64_t from, int64_t to) const {
  IntervalSet out;
  auto it = std::lower_bound(spans_.begin(), spans_.end(), from,
                             [](const Interval& s, int64_t t) { return s.end <= t; });
  for (; it != spans_.end() && it->begin < to; ++it) {
    out.spans_.push_back({std::max(it->begin, from), std::min(it->end, to)});
  }
  return out;
}

int64_t IntervalSet::length() const {
  int64_t total = 0;
  for (const Interval& s : spans_) total += s.end - s.begin;
  return total;
}

int64_t IntervalSet::length_within(int64_t from, int64_t to) const {
  std::size_t hint = 0;
  auto it = std::lower_bound(spans_.begin(), spans_.end(), from,
                             [](const Interval& s, int64_t t) { return s.end <= t; });
  hint = static_cast<std::size_t>(it - spans_.begin());
  return length_within(from, to, hint);
}

}  // namespace ncclwatch::analysis

// A sorted list of disjoint half-open intervals [start, end) of host time, coalesced as they are
// added: the GPU time of one step (compute kernels back to back on a stream become one interval),
// for the drain thread's step summaries (step_summarizer.h). Never on the hot path.
//
// Bounded: past kMaxIntervals the shortest gaps are closed (the list keeps its total span and
// loses at most those gaps from the idle time), so a step of a million tiny kernels costs the
// drain thread a bounded amount of memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

namespace ncclwatch::shim {

class IntervalList {
 public:
  static constexpr std::size_t kMaxIntervals = 4096;
  using Interval = std::pair<int64_t, int64_t>;

  void add(int64_t start, int64_t end) {
    if (end <= start) return;
    // Records arrive nearly in time order: usually at (or near) the back.
    auto it = std::upper_bound(v_.begin(), v_.end(), start,
                               [](int64_t t, const Interval& i) { return t < i.first; });
    if (it != v_.begin() && std::prev(it)->second >= start) {
      --it;
      it->second = std::max(it->second, end);
    } else {
      it = v_.insert(it, {start, end});
    }
    auto next = std::next(it);
    auto last = next;
    while (last != v_.end() && last->first <= it->second) {
      it->second = std::max(it->second, last->second);
      ++last;
    }
    v_.erase(next, last);
    if (v_.size() > kMaxIntervals) close_shortest_gaps();
  }

  // Removes and returns the part at or after `t` (a step boundary found after its intervals).
  IntervalList split_at(int64_t t) {
    IntervalList tail;
    auto it = std::lower_bound(v_.begin(), v_.end(), t,
                               [](const Interval& i, int64_t x) { return i.second <= x; });
    if (it == v_.end()) return tail;
    if (it->first < t) {
      tail.v_.push_back({t, it->second});
      it->second = t;
      ++it;
    }
    tail.v_.insert(tail.v_.end(), it, v_.end());
    v_.erase(it, v_.end());
    return tail;
  }

  // Adds every interval of `other` (the tail of a previous step that belongs here).
  void merge(const IntervalList& other) {
    for (const auto& i : other.v_) add(i.first, i.second);
  }

  // Total length inside [lo, hi).
  int64_t length(int64_t lo, int64_t hi) const {
    int64_t n = 0;
    for (const auto& i : v_) n += clip(i, lo, hi);
    return n;
  }

  // Length of `a` not covered by `b`, inside [lo, hi).
  static int64_t length_minus(const IntervalList& a, const IntervalList& b, int64_t lo,
                              int64_t hi) {
    int64_t covered = 0;
    std::size_t j = 0;
    for (const auto& x : a.v_) {
      while (j < b.v_.size() && b.v_[j].second <= x.first) ++j;
      for (std::size_t k = j; k < b.v_.size() && b.v_[k].first < x.second; ++k) {
        const Interval both{std::max(x.first, b.v_[k].first), std::min(x.second, b.v_[k].second)};
        covered += clip(both, lo, hi);
      }
    }
    return a.length(lo, hi) - covered;
  }

  // Length of the union of the lists, inside [lo, hi).
  static int64_t union_length(std::initializer_list<const IntervalList*> lists, int64_t lo,
                              int64_t hi) {
    IntervalList all;
    for (const IntervalList* l : lists)
      for (const auto& i : l->v_) all.add(i.first, i.second);
    return all.length(lo, hi);
  }

  bool empty() const { return v_.empty(); }
  std::size_t size() const { return v_.size(); }
  void clear() { v_.clear(); }
  const std::vector<Interval>& intervals() const { return v_; }

 private:
  static int64_t clip(const Interval& i, int64_t lo, int64_t hi) {
    const int64_t s = std::max(i.first, lo), e = std::min(i.second, hi);
    return e > s ? e - s : 0;
  }

  // Closes every gap no longer than the one at the median of the gaps: about half the intervals
  // go, so this runs once per kMaxIntervals / 2 additions at most.
  void close_shortest_gaps() {
    std::vector<int64_t> gaps;
    gaps.reserve(v_.size());
    for (std::size_t i = 1; i < v_.size(); ++i) gaps.push_back(v_[i].first - v_[i - 1].second);
    auto mid = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2);
    std::nth_element(gaps.begin(), mid, gaps.end());
    const int64_t close = *mid;
    std::vector<Interval> out;
    out.reserve(v_.size() / 2 + 1);
    for (const auto& i : v_) {
      if (!out.empty() && i.first - out.back().second <= close) {
        out.back().second = std::max(out.back().second, i.second);
      } else {
        out.push_back(i);
      }
    }
    v_ = std::move(out);
  }

  std::vector<Interval> v_;
};

}  // namespace ncclwatch::shim

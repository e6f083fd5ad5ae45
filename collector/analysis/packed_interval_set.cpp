#include "analysis/packed_interval_set.h"

#include <algorithm>

#include "model/leb128.h"

namespace ncclwatch::analysis {
namespace {

// The bytes were written by model::put_leb128 from this process's own sets: no bounds to check
// beyond the end of the buffer.
uint64_t get_varint(const uint8_t*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
}

}  // namespace

PackedIntervalSet::PackedIntervalSet(const IntervalSet& set) : count_(set.size()) {
  const std::vector<Interval>& spans = set.spans();
  bytes_.reserve(spans.size() * 5);
  marks_.reserve(spans.size() / kSpansPerMark + 1);
  int64_t prev_end = 0;
  for (std::size_t k = 0; k < spans.size(); ++k) {
    const Interval& s = spans[k];
    if (k % kSpansPerMark == 0) {
      marks_.push_back({s.begin, bytes_.size()});
      prev_end = s.begin;  // the mark holds the begin: the gap written is 0
    }
    // IntervalSet's invariant: sorted, disjoint, non-empty; both numbers are >= 0.
    model::put_leb128(bytes_, static_cast<uint64_t>(s.begin - prev_end));
    model::put_leb128(bytes_, static_cast<uint64_t>(s.end - s.begin));
    prev_end = s.end;
  }
  back_end_ = spans.empty() ? 0 : spans.back().end;
  bytes_.shrink_to_fit();
  marks_.shrink_to_fit();
}

template <class F>
void PackedIntervalSet::decode_from(std::size_t m, F&& f) const {
  if (m >= marks_.size()) return;
  const uint8_t* p = bytes_.data() + marks_[m].offset;
  int64_t prev_end = marks_[m].begin;
  for (std::size_t k = m * kSpansPerMark; k < count_; ++k) {
    if (k % kSpansPerMark == 0) prev_end = marks_[k / kSpansPerMark].begin;
    const int64_t begin = prev_end + static_cast<int64_t>(get_varint(p));
    const int64_t end = begin + static_cast<int64_t>(get_varint(p));
    if (!f(Interval{begin, end})) return;
    prev_end = end;
  }
}

IntervalSet PackedIntervalSet::unpack() const {
  std::vector<Interval> spans;
  spans.reserve(count_);
  decode_from(0, [&](const Interval& s) {
    spans.push_back(s);
    return true;
  });
  return IntervalSet::from_sorted(spans);
}

IntervalSet PackedIntervalSet::clip(int64_t from, int64_t to) const {
  if (to <= from || marks_.empty()) return {};
  // From the last mark whose span begins at or before `from`: every span before it ends before
  // that begin (the spans are disjoint), so none of them reaches the window.
  auto it = std::upper_bound(marks_.begin(), marks_.end(), from,
                             [](int64_t t, const Mark& m) { return t < m.begin; });
  const std::size_t m =
      it == marks_.begin() ? 0 : static_cast<std::size_t>(it - marks_.begin()) - 1;
  std::vector<Interval> spans;
  decode_from(m, [&](const Interval& s) {
    if (s.begin >= to) return false;
    if (s.end > from) spans.push_back({std::max(s.begin, from), std::min(s.end, to)});
    return true;
  });
  return IntervalSet::from_sorted(spans);
}

std::size_t PackedIntervalSet::heap_bytes() const {
  return bytes_.capacity() + marks_.capacity() * sizeof(Mark);
}

}  // namespace ncclwatch::analysis

#include "analysis/time_bins.h"

#include <algorithm>

namespace ncclwatch::analysis {

int64_t nice_floor(int64_t ns) {
  if (ns <= 1) return 1;
  int64_t decade = 1;
  while (decade <= ns / 10) decade *= 10;
  for (int64_t m : {5, 2, 1}) {
    if (m * decade <= ns) return m * decade;
  }
  return decade;
}

int64_t nice_ceil(int64_t ns) {
  const int64_t f = nice_floor(ns);
  if (f >= ns) return f;
  // The next of 1, 2, 5 x 10^k above f.
  int64_t decade = 1;
  while (decade <= f / 10) decade *= 10;
  const int64_t m = f / decade;
  return m == 1 ? 2 * decade : m == 2 ? 5 * decade : 10 * decade;
}

TimeBins TimeBins::nice(int64_t begin_ns, int64_t end_ns, int64_t target_ns, int64_t min_width_ns) {
  TimeBins b;
  b.begin_ns = begin_ns;
  b.width_ns = std::max(nice_floor(std::max<int64_t>(1, target_ns)),
                        nice_ceil(std::max<int64_t>(1, min_width_ns)));
  const int64_t len = std::max<int64_t>(0, end_ns - begin_ns);
  b.count = static_cast<std::size_t>((len + b.width_ns - 1) / b.width_ns);
  return b;
}

TimeBins TimeBins::exact(int64_t begin_ns, int64_t end_ns, std::size_t count) {
  TimeBins b;
  b.begin_ns = begin_ns;
  const int64_t len = std::max<int64_t>(0, end_ns - begin_ns);
  b.count = count;
  b.width_ns = count > 0 ? std::max<int64_t>(1, len / static_cast<int64_t>(count)) : 1;
  return b;
}

void cover_fractions(const IntervalSet& set, int64_t offset, const TimeBins& bins,
                     std::vector<float>& out) {
  std::vector<double> ns(bins.count, 0.0);
  out.assign(bins.count, 0.0f);
  if (bins.count == 0) return;
  const int64_t w = bins.width_ns, end = bins.end_ns();
  const auto& spans = set.spans();
  // First span that ends after the bins begin (spans are sorted and disjoint).
  auto it = std::upper_bound(spans.begin(), spans.end(), bins.begin_ns - offset,
                             [](int64_t t, const Interval& s) { return t < s.end; });
  for (; it != spans.end(); ++it) {
    int64_t a = std::max(it->begin + offset, bins.begin_ns);
    const int64_t e = std::min(it->end + offset, end);
    if (a >= end) break;
    while (a < e) {
      const auto bin = static_cast<std::size_t>((a - bins.begin_ns) / w);
      const int64_t bin_end = bins.begin_ns + w * static_cast<int64_t>(bin + 1);
      const int64_t to = std::min(e, bin_end);
      ns[bin] += static_cast<double>(to - a);
      a = to;
    }
  }
  const auto width = static_cast<double>(w);
  for (std::size_t b = 0; b < bins.count; ++b)
    out[b] = static_cast<float>(std::min(1.0, ns[b] / width));
}

}  // namespace ncclwatch::analysis

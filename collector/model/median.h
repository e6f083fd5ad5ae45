// The one median of the collector (clock alignment, analyses, topology checks). For an even count
// it is the mean of the two middle values — integers: rounded down, computed without overflow —
// so it leans to neither half: with 4 ranks, "the median rank's arrival" is
// between the 2nd and the 3rd, not the 3rd. An empty input gives T{} (0).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace ncclwatch::model {

// The mean of the two middle values lo <= hi of a sample.
template <typename T>
T middle_mean(T lo, T hi) {
  if constexpr (std::is_floating_point_v<T>) {
    return lo / 2 + hi / 2;  // halves first: no overflow to inf near the top of the range
  } else {
    static_assert(std::is_integral_v<T>);
    return (lo >> 1) + (hi >> 1) + (lo & hi & 1);  // floor((lo + hi) / 2), exact
  }
}

// Median of `v`, reordering it (nth_element: linear time).
template <typename T>
T median_in_place(std::span<T> v) {
  if (v.empty()) return T{};
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return middle_mean(*std::max_element(v.begin(), mid), *mid);
}

template <typename T>
T median(std::vector<T> v) {
  return median_in_place(std::span<T>(v));
}

// Median of values already sorted ascending.
template <typename T>
T median_of_sorted(std::span<const T> v) {
  if (v.empty()) return T{};
  return middle_mean(v[(v.size() - 1) / 2], v[v.size() / 2]);
}

}  // namespace ncclwatch::model

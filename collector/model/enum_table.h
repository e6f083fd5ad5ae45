// Tables indexed by an enum that ends in a kCount sentinel: names (to_string, JSON, dumps) or the
// values an enum stands for. Built with enum_table / enum_names, a table with an entry missing or
// one too many does not compile, so a value added to the enum without its name is a build error
// rather than a read past the end of the table.
#pragma once

#include <array>
#include <cstddef>

namespace ncclwatch::model {

// The number of values of `Enum` (its kCount sentinel).
template <typename Enum>
inline constexpr std::size_t enum_count = static_cast<std::size_t>(Enum::kCount);

// enum_table<MetricOp>({Func::kAllReduce, ...}): one entry per value of Enum, in its order.
template <typename Enum, typename T, std::size_t N>
constexpr std::array<T, N> enum_table(const T (&entries)[N]) {
  static_assert(N == enum_count<Enum>,
                "enum_table: the table needs exactly one entry per value of its enum (before "
                "kCount): add the entry of the value you added");
  std::array<T, N> table{};
  for (std::size_t i = 0; i < N; ++i) table[i] = entries[i];
  return table;
}

// enum_names<Pattern>({"persistent", "periodic", "spikes"}).
template <typename Enum, std::size_t N>
constexpr std::array<const char*, N> enum_names(const char* const (&names)[N]) {
  return enum_table<Enum, const char*, N>(names);
}

}  // namespace ncclwatch::model

#include "match/rank_list.h"

#include <algorithm>

#include <fmt/format.h>

namespace ncclwatch::match {

std::string format_rank_list(std::vector<int32_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  bool unknown = false;
  std::size_t i = 0;
  while (i < ranks.size()) {
    if (ranks[i] < 0) {
      unknown = true;
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j == i) {
      out += fmt::format("{}", ranks[i]);
    } else {
      out += fmt::format("{}-{}", ranks[i], ranks[j]);
    }
    i = j + 1;
  }
  if (unknown) out += out.empty() ? "?" : ",?";
  return out;
}

}  // namespace ncclwatch::match

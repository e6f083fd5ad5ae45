// Compact rank lists for one-line findings: {0,1,2,3,4,6,7} -> "0-4,6-7".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclwatch::match {

// Sorts a copy, drops duplicates, collapses runs of consecutive ranks. Unknown ranks (-1) are
// printed as "?". Empty input gives "".
std::string format_rank_list(std::vector<int32_t> ranks);

}  // namespace ncclwatch::match

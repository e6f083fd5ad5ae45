// Collects instances some members never entered into runs: consecutive instances with the same
// op and the same ranks missing become one entry ("rank 5 missing from #100-#4811"), so a rank
// that stopped early yields one line, not thousands.
#pragma once

#include <cstdint>
#include <vector>

#include "model/match_result.h"

namespace ncclwatch::match {

class IncompleteRuns {
 public:
  // `member_ranks[i]`: global rank of member slot i; at most `max_runs` runs are kept: the first
  // few and the most recent (the hang is at the end).
  IncompleteRuns(uint64_t comm_id, std::vector<int32_t> member_ranks, uint32_t max_runs);

  // One incomplete instance; `present[i]` says whether member slot i entered it.
  void add(uint64_t seq, format::Func func, const std::vector<uint8_t>& present);
  // A complete instance (or the end) closes the current run.
  void close();
  // Moves the kept runs (in seq order) into `out`; returns how many runs were left out.
  uint64_t finish(std::vector<model::IncompleteInstance>& out);

 private:
  static constexpr std::size_t kKeepFirst = 8;
  uint64_t comm_id_;
  std::vector<int32_t> member_ranks_;
  std::size_t max_runs_;
  bool open_ = false;
  uint64_t first_ = 0, last_ = 0, count_ = 0;
  format::Func func_ = format::Func::kUnknown;
  std::vector<uint8_t> present_;
  std::vector<model::IncompleteInstance> runs_;
  uint64_t omitted_ = 0;
};

}  // namespace ncclwatch::match

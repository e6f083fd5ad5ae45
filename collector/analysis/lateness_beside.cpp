#include "analysis/lateness_beside.h"

#include <algorithm>
#include <limits>

#include "model/median.h"
#include "model/saturating.h"
#include "trace/parallel_for.h"

namespace ncclwatch::analysis {
namespace {

// Instance i's median arrival over its members not excluded, from the arrival order Arrivals
// keeps (no sort): the middle one, or the mean of the two middle ones (model/median.h's rule).
int64_t median_beside(const model::MatchResult& match, const Arrivals& arrivals, std::size_t i,
                      const std::vector<bool>& excluded) {
  const model::CollectiveInstance& inst = match.instances[i];
  const std::size_t first = inst.first_member, n = inst.nmembers;
  const uint32_t* order = arrivals.by_arrival.data() + first;
  auto kept = [&](std::size_t k) {
    const std::size_t r = match.members[first + order[k]].rank_index;
    return r >= excluded.size() || !excluded[r];
  };
  std::size_t count = 0;
  for (std::size_t k = 0; k < n; ++k) count += kept(k);
  if (count == 0 || count == n) return arrivals.instances[i].median_ns;
  // The kept members' arrivals at positions (count - 1) / 2 and count / 2 among them.
  const std::size_t lo = (count - 1) / 2, hi = count / 2;
  int64_t lo_ns = 0, hi_ns = 0;
  for (std::size_t k = 0, j = 0; k < n && j <= hi; ++k) {
    if (!kept(k)) continue;
    const int64_t t = arrivals.member_ns[first + order[k]];
    if (j == lo) lo_ns = t;
    if (j == hi) hi_ns = t;
    ++j;
  }
  return model::middle_mean(lo_ns, hi_ns);
}

}  // namespace

std::vector<std::vector<int64_t>> step_lateness_beside(const model::MatchResult& match,
                                                       const Arrivals& arrivals,
                                                       const std::vector<RankOverlap>& overlaps,
                                                       const std::vector<bool>& excluded,
                                                       unsigned workers) {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  std::vector<std::vector<int64_t>> out(overlaps.size());
  for (std::size_t r = 0; r < overlaps.size(); ++r)
    out[r].assign(overlaps[r].plan.steps.size(), kNone);
  const std::size_t ninst = match.instances.size();
  std::vector<int64_t> median(ninst, 0);
  const std::size_t nchunks = std::min<std::size_t>(ninst, std::size_t{4} * std::max(1u, workers));
  trace::parallel_for(nchunks, workers, [&](std::size_t c) {
    for (std::size_t i = c * ninst / nchunks; i < (c + 1) * ninst / nchunks; ++i) {
      if (arrivals.instances[i].used) median[i] = median_beside(match, arrivals, i, excluded);
    }
  });
  for (std::size_t i = 0; i < ninst; ++i) {
    if (!arrivals.instances[i].used) continue;
    const model::CollectiveInstance& inst = match.instances[i];
    for (std::size_t m = inst.first_member; m < inst.first_member + inst.nmembers; ++m) {
      const model::InstanceMember& mem = match.members[m];
      if (mem.rank_index >= overlaps.size()) continue;
      const auto& soc = overlaps[mem.rank_index].plan.step_of_call;
      const int32_t step = mem.call_index < soc.size() ? soc[mem.call_index] : -1;
      std::vector<int64_t>& x = out[mem.rank_index];
      if (step < 0 || static_cast<std::size_t>(step) >= x.size()) continue;
      int64_t& worst = x[static_cast<std::size_t>(step)];
      worst = std::max(worst, model::sat_sub(arrivals.member_ns[m], median[i]));
    }
  }
  return out;
}

}  // namespace ncclwatch::analysis

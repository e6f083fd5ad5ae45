#include "analysis/rank_activities.h"

#include <algorithm>

#include "analysis/rank_digest.h"
#include "trace/parallel_for.h"

namespace ncclwatch::analysis {
namespace {

void bound(RankActivities::Summary& s, bool empty, int64_t begin, int64_t end) {
  if (empty) return;
  s.kernels_begin = s.any_kernel ? std::min(s.kernels_begin, begin) : begin;
  s.kernels_end = s.any_kernel ? std::max(s.kernels_end, end) : end;
  s.any_kernel = true;
}

template <class A>
void fill(RankActivities::Summary& s, const A& a) {
  s.source = a.source;
  s.has_compute = a.has_compute;
  s.first_ns = a.first_ns;
  s.last_ns = a.last_ns;
}

}  // namespace

RankActivities::RankActivities(const model::JobTrace& job, unsigned workers)
    : job_(&job), held_(job.ranks.size()), summaries_(job.ranks.size()) {
  trace::parallel_for(job.ranks.size(), workers, [&](std::size_t i) {
    const model::RankTrace& rank = job.ranks[i];
    Summary& s = summaries_[i];
    if (rank.digest) {
      const PackedActivity& p = rank.digest->activity;
      fill(s, p);
      bound(s, p.comm.empty(), p.comm.front_begin(), p.comm.back_end());
      bound(s, p.compute.empty(), p.compute.front_begin(), p.compute.back_end());
      return;
    }
    held_[i] = RankActivity::of(rank);
    const RankActivity& a = held_[i];
    fill(s, a);
    if (!a.comm.empty()) bound(s, false, a.comm.spans().front().begin, a.comm.spans().back().end);
    if (!a.compute.empty())
      bound(s, false, a.compute.spans().front().begin, a.compute.spans().back().end);
  });
}

std::shared_ptr<const RankActivity> RankActivities::at(std::size_t i) const {
  if (const auto& d = job_->ranks[i].digest)
    return std::make_shared<const RankActivity>(d->activity.unpack());
  return std::shared_ptr<const RankActivity>(std::shared_ptr<const RankActivity>(), &held_[i]);
}

std::shared_ptr<const IntervalSet> RankActivities::compute(std::size_t i) const {
  if (const auto& d = job_->ranks[i].digest)
    return std::make_shared<const IntervalSet>(d->activity.compute.unpack());
  return std::shared_ptr<const IntervalSet>(std::shared_ptr<const IntervalSet>(),
                                            &held_[i].compute);
}

RankActivity RankActivities::clip(std::size_t i, int64_t from, int64_t to) const {
  if (const auto& d = job_->ranks[i].digest) return d->activity.clip(from, to);
  return held_[i].clip(from, to);
}

}  // namespace ncclwatch::analysis

#include "analysis/job_steps.h"

#include <algorithm>

#include "model/median.h"

namespace ncclwatch::analysis {

std::vector<JobStep> job_steps(const std::vector<const StepPlan*>& plans,
                               const model::ClockAlignment& clocks) {
  std::size_t most = 0, with_steps = 0;
  std::vector<std::size_t> warmups;
  for (const StepPlan* p : plans) {
    if (p == nullptr || p->steps.empty()) continue;
    most = std::max(most, p->steps.size());
    ++with_steps;
    warmups.push_back(p->warmup);
  }
  std::vector<JobStep> out;
  if (with_steps == 0) return out;
  const std::size_t warmup = model::median(warmups);
  std::vector<int64_t> begins, ends;
  for (std::size_t k = 0; k < most; ++k) {
    begins.clear();
    ends.clear();
    JobStep s;
    s.index = k;
    s.first_begin_ns = INT64_MAX;
    s.last_end_ns = INT64_MIN;
    std::size_t partial = 0;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const StepPlan* p = plans[i];
      if (p == nullptr || k >= p->steps.size()) continue;
      const int64_t off = clocks.at(i);
      begins.push_back(p->steps[k].begin + off);
      ends.push_back(p->steps[k].end + off);
      s.first_begin_ns = std::min(s.first_begin_ns, begins.back());
      s.last_end_ns = std::max(s.last_end_ns, ends.back());
      partial += p->last_partial && k + 1 == p->steps.size();
    }
    s.ranks = begins.size();
    if (2 * s.ranks < with_steps) break;  // later steps only some ranks have: not the job's
    s.begin_ns = model::median(begins);
    s.end_ns = std::max(s.begin_ns, model::median(ends));
    s.warmup = k < warmup;
    s.partial = 2 * partial > s.ranks;
    out.push_back(s);
  }
  return out;
}

int64_t median_step_ns(const std::vector<JobStep>& steps) {
  std::vector<int64_t> steady, all;
  for (const JobStep& s : steps) {
    all.push_back(s.length());
    if (!s.warmup && !s.partial) steady.push_back(s.length());
  }
  return model::median(steady.empty() ? all : steady);
}

}  // namespace ncclwatch::analysis

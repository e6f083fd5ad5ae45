#include "match/matcher.h"

#include <algorithm>
#include <map>

#include "match/comm_directory.h"
#include "match/matcher_parts.h"

namespace ncclwatch::match {

namespace {

// The size most members report; members disagreeing is a finding of its own.
void summarise_comm(const CommEntry& comm, model::CommSummary& s) {
  s.id = comm.id;
  std::map<int32_t, int> sizes;
  for (const CommMember& m : comm.members) {
    s.ranks.push_back(m.global_rank);
    if (m.reported_nranks > 0) ++sizes[m.reported_nranks];
  }
  int best = 0;
  for (auto [size, votes] : sizes) {
    if (votes > best) s.nranks = size, best = votes;
  }
  s.size_disagreement = sizes.size() > 1;
  if (sizes.empty()) s.nranks = static_cast<int32_t>(comm.members.size());
  s.untraced = std::max<int32_t>(0, s.nranks - static_cast<int32_t>(comm.members.size()));
}

}  // namespace

model::MatchResult match_job(const model::JobTrace& job, const MatchOptions& options) {
  model::MatchResult out;
  std::vector<CommEntry> comms = build_comm_directory(job);
  std::size_t calls = 0;
  for (const auto& r : job.ranks) calls += r.calls.size();
  out.members.reserve(calls);
  out.comms.reserve(comms.size());
  for (const CommEntry& comm : comms) {
    model::CommSummary summary;
    summarise_comm(comm, summary);
    match_collectives(job, comm, options, summary, out);
    match_p2p(job, comm, options, summary, out);
    out.comms.push_back(std::move(summary));
  }
  return out;
}

}  // namespace ncclwatch::match

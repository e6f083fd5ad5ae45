#include "live/node_collective_matcher.h"

#include <algorithm>

namespace ncclwatch::live {

NodeCollectiveMatcher::NodeCollectiveMatcher(uint64_t seq_window, std::size_t max_pending)
    : seq_window_(seq_window), max_pending_(max_pending) {}

void NodeCollectiveMatcher::add_member(uint64_t comm) {
  ++members_[comm];
}

void NodeCollectiveMatcher::add(std::size_t member, uint64_t comm, uint64_t seq, int64_t start_ns,
                                int64_t end_ns, std::vector<Share>& out) {
  if (end_ns < start_ns) return;
  auto it = pending_.try_emplace({comm, seq}).first;
  // The same rank twice (a group's kernel tied to two calls of one comm cannot happen; a reader
  // restart can): keep the first.
  for (const auto& a : it->second)
    if (a.member == member) return;
  it->second.push_back({member, start_ns, end_ns});
  const auto m = members_.find(comm);
  const uint32_t expected = m == members_.end() ? 0 : m->second;
  if (expected > 0 && it->second.size() >= expected) decide(it, out);

  uint64_t& max_seq = max_seq_[comm];
  max_seq = std::max(max_seq, seq);
  if (max_seq > seq_window_) {
    // Collectives of this comm the node's members should all have reached by now.
    for (auto old = pending_.lower_bound({comm, 0}); old != pending_.end() &&
                                                     old->first.first == comm &&
                                                     old->first.second < max_seq - seq_window_;)
      decide(old++, out);
  }
  while (pending_.size() > max_pending_) decide(pending_.begin(), out);
}

void NodeCollectiveMatcher::decide(std::map<Key, std::vector<Arrival>>::iterator it,
                                   std::vector<Share>& out) {
  const auto& arrivals = it->second;
  const auto m = members_.find(it->first.first);
  if (arrivals.size() < 2) {
    // Nothing to compare with: a one-rank-per-node comm, or the others' records are gone.
    if (m != members_.end() && m->second == 1 && arrivals.size() == 1) {
      out.push_back({arrivals[0].member, 0, (arrivals[0].end - arrivals[0].start) * 1e-9, 0});
      ++decided_;
    } else {
      ++unmatched_;
    }
    pending_.erase(it);
    return;
  }
  if (m == members_.end() || arrivals.size() < m->second) ++partial_;
  int64_t min_dur = INT64_MAX, min_start = INT64_MAX;
  for (const auto& a : arrivals) {
    min_dur = std::min(min_dur, a.end - a.start);
    min_start = std::min(min_start, a.start);
  }
  for (const auto& a : arrivals)
    out.push_back({a.member, (a.end - a.start - min_dur) * 1e-9, min_dur * 1e-9,
                   (a.start - min_start) * 1e-9});
  ++decided_;
  pending_.erase(it);
}

}  // namespace ncclwatch::live

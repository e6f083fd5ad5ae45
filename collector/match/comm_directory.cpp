#include "match/comm_directory.h"

#include <algorithm>
#include <unordered_map>

namespace ncclwatch::match {

namespace {

// Index of (comm id) -> comm entry, and per rank (comm entry) -> member slot.
class DirectoryBuilder {
 public:
  std::vector<CommEntry> comms;

  CommMember& member(uint64_t comm_id, uint32_t rank_index, const model::RankInfo& info,
                     std::unordered_map<uint64_t, uint32_t>& rank_members) {
    auto [it, fresh] = index_.try_emplace(comm_id, static_cast<uint32_t>(comms.size()));
    if (fresh) comms.push_back(CommEntry{comm_id, {}});
    CommEntry& entry = comms[it->second];
    auto [mit, mfresh] =
        rank_members.try_emplace(comm_id, static_cast<uint32_t>(entry.members.size()));
    if (mfresh) {
      CommMember m;
      m.rank_index = rank_index;
      m.global_rank = info.rank;
      entry.members.push_back(std::move(m));
    }
    return entry.members[mit->second];
  }

 private:
  std::unordered_map<uint64_t, uint32_t> index_;
};

}  // namespace

std::vector<CommEntry> build_comm_directory(const model::JobTrace& job) {
  DirectoryBuilder builder;
  for (uint32_t r = 0; r < job.ranks.size(); ++r) {
    const model::RankTrace& rank = job.ranks[r];
    std::unordered_map<uint64_t, uint32_t> rank_members;  // comm id -> member slot, this rank
    for (const model::CommInfo& c : rank.comms) {
      if (c.id == 0) continue;
      CommMember& m = builder.member(c.id, r, rank.info, rank_members);
      // A comm re-created with the same id (same unique id reused) keeps its first identity.
      if (m.reported_nranks == 0) {
        m.comm_rank = c.rank;
        m.reported_nranks = c.nranks;
      }
    }
    // Calls arrive in runs on one comm: remember the last comm's member to skip the lookups.
    uint64_t last_id = 0;
    CommMember* last = nullptr;
    for (uint32_t i = 0; i < rank.calls.size(); ++i) {
      const model::CallEvent& call = rank.calls[i];
      bool coll = format::is_collective(call.func);
      if (call.comm_id == 0 || (!coll && !format::is_p2p(call.func))) continue;
      if (last == nullptr || call.comm_id != last_id) {
        // `last` stays valid while other comms are added: moving a CommEntry keeps its members'
        // buffer, and this rank's member of `last`'s comm already exists (no push_back there).
        last = &builder.member(call.comm_id, r, rank.info, rank_members);
        last_id = call.comm_id;
      }
      (coll ? last->colls : last->p2p).push_back(i);
    }
  }
  for (CommEntry& entry : builder.comms) {
    for (CommMember& m : entry.members) {
      const auto& calls = job.ranks[m.rank_index].calls;
      auto by_seq = [&calls](uint32_t a, uint32_t b) { return calls[a].seq < calls[b].seq; };
      if (!std::is_sorted(m.colls.begin(), m.colls.end(), by_seq)) {
        std::stable_sort(m.colls.begin(), m.colls.end(), by_seq);
      }
    }
    std::sort(entry.members.begin(), entry.members.end(),
              [](const CommMember& a, const CommMember& b) {
                bool ua = a.comm_rank < 0, ub = b.comm_rank < 0;
                if (ua != ub) return ub;
                if (a.comm_rank != b.comm_rank) return a.comm_rank < b.comm_rank;
                if (a.global_rank != b.global_rank) return a.global_rank < b.global_rank;
                return a.rank_index < b.rank_index;
              });
  }
  std::sort(builder.comms.begin(), builder.comms.end(), [](const CommEntry& a, const CommEntry& b) {
    if (a.members.size() != b.members.size()) return a.members.size() > b.members.size();
    return a.id < b.id;
  });
  return std::move(builder.comms);
}

}  // namespace ncclwatch::match

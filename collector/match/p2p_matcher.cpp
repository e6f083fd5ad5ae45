// Send/recv pairing: the n-th send from comm rank a to b (per-peer seq n) meets the n-th recv on
// b from a. One sort of the comm's p2p calls by (sender, receiver, seq) puts partners side by side.
#include <algorithm>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "match/func_name.h"
#include "match/matcher_parts.h"

namespace ncclwatch::match {

namespace {

struct P2pCall {
  int32_t sender;  // comm ranks
  int32_t receiver;
  uint64_t seq;
  uint8_t is_recv;
  uint32_t slot;  // member slot
  uint32_t call;  // index into that rank's calls
  auto key() const { return std::tie(sender, receiver, seq, is_recv); }
};

}  // namespace

void match_p2p(const model::JobTrace& job, const CommEntry& comm, const MatchOptions& options,
               model::CommSummary& summary, model::MatchResult& out) {
  std::vector<P2pCall> calls;
  std::unordered_map<int32_t, int32_t> global_of;  // comm rank -> global rank
  for (uint32_t slot = 0; slot < comm.members.size(); ++slot) {
    const CommMember& m = comm.members[slot];
    // Without a comm record the comm rank is unknown; the global rank is right for the world comm.
    int32_t me = m.comm_rank >= 0 ? m.comm_rank : m.global_rank;
    global_of.emplace(me, m.global_rank);
    const auto& rank_calls = job.ranks[m.rank_index].calls;
    for (uint32_t idx : m.p2p) {
      const model::CallEvent& c = rank_calls[idx];
      bool recv = c.func == format::Func::kRecv;
      calls.push_back(P2pCall{recv ? c.peer : me, recv ? me : c.peer, c.seq,
                              static_cast<uint8_t>(recv), slot, idx});
    }
  }
  if (calls.empty()) return;
  std::sort(calls.begin(), calls.end(),
            [](const P2pCall& a, const P2pCall& b) { return a.key() < b.key(); });
  auto global = [&global_of](int32_t comm_rank) {
    auto it = global_of.find(comm_rank);
    return it == global_of.end() ? -1 : it->second;
  };
  const auto& call_of = [&](const P2pCall& p) -> const model::CallEvent& {
    return job.ranks[comm.members[p.slot].rank_index].calls[p.call];
  };

  std::size_t kept = 0;
  model::IncompleteInstance* open = nullptr;
  uint64_t desyncs_listed = 0;
  for (std::size_t i = 0; i < calls.size();) {
    const P2pCall& a = calls[i];
    bool paired = i + 1 < calls.size() && !a.is_recv && calls[i + 1].is_recv &&
                  calls[i + 1].sender == a.sender && calls[i + 1].receiver == a.receiver &&
                  calls[i + 1].seq == a.seq;
    if (paired) {
      const P2pCall& b = calls[i + 1];
      const model::CallEvent& send = call_of(a);
      const model::CallEvent& recv = call_of(b);
      if (send.count != recv.count || send.datatype != recv.datatype) {
        ++summary.desyncs;
        if (desyncs_listed++ < options.max_desyncs_per_comm) {
          model::Desync d;
          d.comm_id = comm.id;
          d.seq = a.seq;
          d.ranks = {global(a.sender), global(a.receiver)};
          d.what = fmt::format("send {}x{} from rank {} vs recv {}x{} on rank {}", send.count,
                               datatype_name(send.datatype), global(a.sender), recv.count,
                               datatype_name(recv.datatype), global(a.receiver));
          out.desyncs.push_back(std::move(d));
        }
      }
      model::CollectiveInstance inst;
      inst.comm_id = comm.id;
      inst.seq = a.seq;
      inst.func = format::Func::kSend;
      inst.bytes = send.bytes();
      inst.first_member = static_cast<uint32_t>(out.members.size());
      inst.nmembers = 2;
      inst.expected = 2;
      out.members.push_back(model::InstanceMember{comm.members[a.slot].rank_index, a.call});
      out.members.push_back(model::InstanceMember{comm.members[b.slot].rank_index, b.call});
      out.instances.push_back(inst);
      ++summary.instances;
      open = nullptr;
      i += 2;
      continue;
    }
    // No partner: the other side never posted it (a hang in a pipeline stage looks like this).
    ++summary.incomplete;
    format::Func func = a.is_recv ? format::Func::kRecv : format::Func::kSend;
    int32_t here = global(a.is_recv ? a.receiver : a.sender);
    int32_t there = global(a.is_recv ? a.sender : a.receiver);
    if (open != nullptr && open->func == func && open->seq_last + 1 == a.seq &&
        open->present_ranks[0] == here && open->missing_ranks[0] == there) {
      open->seq_last = a.seq;
      ++open->count;
    } else if (kept < options.max_incomplete_runs_per_comm) {
      model::IncompleteInstance run;
      run.comm_id = comm.id;
      run.seq = run.seq_last = a.seq;
      run.func = func;
      run.present_ranks = {here};
      run.missing_ranks = {there};
      out.incomplete.push_back(std::move(run));
      open = &out.incomplete.back();
      ++kept;
    } else {
      open = nullptr;
    }
    ++i;
  }
}

}  // namespace ncclwatch::match

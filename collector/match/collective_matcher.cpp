// Collectives of one comm, matched by seq through a dense window: row = seq - base, column =
// member slot, cell = call index. Each member's calls are sorted by seq, so filling a window is a
// merge of sorted lists; a sparse or corrupted seq range costs empty windows skipped, not memory.
#include <algorithm>
#include <limits>
#include <optional>

#include "match/desync_check.h"
#include "match/incomplete_runs.h"
#include "match/matcher_parts.h"

namespace ncclwatch::match {

namespace {
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
}  // namespace

void match_collectives(const model::JobTrace& job, const CommEntry& comm,
                       const MatchOptions& options, model::CommSummary& summary,
                       model::MatchResult& out) {
  const std::size_t nm = comm.members.size();
  if (nm == 0) return;
  std::vector<const model::CallEvent*> rank_calls(nm);
  std::vector<int32_t> member_ranks(nm);
  for (std::size_t m = 0; m < nm; ++m) {
    rank_calls[m] = job.ranks[comm.members[m].rank_index].calls.data();
    member_ranks[m] = comm.members[m].global_rank;
  }
  // About 4 MiB of table whatever the comm size: big windows for small comms.
  const std::size_t window = std::clamp<std::size_t>((std::size_t{1} << 20) / nm, 16, 65536);
  std::vector<uint32_t> table(window * nm, kNone);
  std::vector<std::size_t> cursor(nm, 0);
  IncompleteRuns runs(comm.id, member_ranks, options.max_incomplete_runs_per_comm);
  DesyncCheck desync_check;
  std::vector<const model::CallEvent*> present_calls;
  std::vector<int32_t> present_ranks;
  std::vector<uint32_t> present_slots;
  std::vector<uint8_t> present_mask(nm);
  std::optional<model::Desync> desync;
  uint64_t desyncs_listed = 0;

  for (;;) {
    uint64_t base = std::numeric_limits<uint64_t>::max();
    for (std::size_t m = 0; m < nm; ++m) {
      const auto& colls = comm.members[m].colls;
      if (cursor[m] < colls.size()) base = std::min(base, rank_calls[m][colls[cursor[m]]].seq);
    }
    if (base == std::numeric_limits<uint64_t>::max()) break;
    std::size_t used = 0;
    for (std::size_t m = 0; m < nm; ++m) {
      const auto& colls = comm.members[m].colls;
      const model::CallEvent* calls = rank_calls[m];
      std::size_t c = cursor[m];
      for (; c < colls.size(); ++c) {
        uint64_t row = calls[colls[c]].seq - base;
        if (row >= window) break;
        uint32_t& cell = table[row * nm + m];
        if (cell == kNone) {
          cell = colls[c];
        } else {
          ++summary.duplicate_seqs;  // same seq twice on one rank: keep the first
        }
        used = std::max<std::size_t>(used, row + 1);
      }
      cursor[m] = c;
    }
    for (std::size_t row = 0; row < used; ++row) {
      uint32_t* cells = &table[row * nm];
      // Fast path (nearly every instance): everyone entered and agrees. One pass, no copies.
      const model::CallEvent* first = nullptr;
      bool fast = true;
      for (std::size_t m = 0; m < nm && fast; ++m) {
        if (cells[m] == kNone) {
          fast = false;
        } else if (first == nullptr) {
          first = &rank_calls[m][cells[m]];
        } else {
          fast = DesyncCheck::agree(*first, rank_calls[m][cells[m]]);
        }
      }
      if (fast) {
        runs.close();
        model::CollectiveInstance inst;
        inst.comm_id = comm.id;
        inst.seq = base + row;
        inst.func = first->func;
        inst.bytes = first->bytes();
        inst.first_member = static_cast<uint32_t>(out.members.size());
        inst.nmembers = static_cast<uint32_t>(nm);
        inst.expected = static_cast<uint32_t>(summary.nranks);
        for (std::size_t m = 0; m < nm; ++m) {
          out.members.push_back(model::InstanceMember{comm.members[m].rank_index, cells[m]});
          cells[m] = kNone;
        }
        out.instances.push_back(inst);
        ++summary.instances;
        continue;
      }
      present_calls.clear();
      present_ranks.clear();
      present_slots.clear();
      for (std::size_t m = 0; m < nm; ++m) {
        bool here = cells[m] != kNone;
        present_mask[m] = here;
        if (here) {
          present_calls.push_back(&rank_calls[m][cells[m]]);
          present_ranks.push_back(member_ranks[m]);
          present_slots.push_back(static_cast<uint32_t>(m));
        }
      }
      if (present_calls.empty()) continue;
      const uint64_t seq = base + row;
      std::size_t ref = desync_check.check(present_calls, present_ranks, desync);
      if (desync) {
        ++summary.desyncs;
        if (desyncs_listed < options.max_desyncs_per_comm) {
          desync->comm_id = comm.id;
          desync->seq = seq;
          out.desyncs.push_back(std::move(*desync));
          ++desyncs_listed;
        }
      }
      const model::CallEvent& reference = *present_calls[ref];
      if (present_calls.size() == nm) {
        runs.close();
        model::CollectiveInstance inst;
        inst.comm_id = comm.id;
        inst.seq = seq;
        inst.func = reference.func;
        inst.bytes = reference.bytes();
        inst.first_member = static_cast<uint32_t>(out.members.size());
        inst.nmembers = static_cast<uint32_t>(nm);
        inst.expected = static_cast<uint32_t>(summary.nranks);
        for (std::size_t m = 0; m < nm; ++m) {
          out.members.push_back(model::InstanceMember{comm.members[m].rank_index, cells[m]});
        }
        out.instances.push_back(inst);
        ++summary.instances;
      } else {
        runs.add(seq, reference.func, present_mask);
        ++summary.incomplete;
      }
      std::fill(cells, cells + nm, kNone);
    }
  }
  runs.finish(out.incomplete);
}

}  // namespace ncclwatch::match

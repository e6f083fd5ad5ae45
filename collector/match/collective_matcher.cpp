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

// One comm's matching state: the window table, each member's cursor into its sorted collectives,
// and what the incomplete and desynced instances have shown so far.
class WindowMatcher {
 public:
  WindowMatcher(const model::JobTrace& job, const CommEntry& comm, const MatchOptions& options,
                model::CommSummary& summary, model::MatchResult& out)
      : comm_(comm),
        options_(options),
        summary_(summary),
        out_(out),
        nm_(comm.members.size()),
        // About 4 MiB of table whatever the comm size: big windows for small comms.
        window_(std::clamp<std::size_t>((std::size_t{1} << 20) / nm_, 16, 65536)),
        rank_calls_(nm_),
        member_ranks_(nm_),
        table_(window_ * nm_, kNone),
        cursor_(nm_, 0),
        runs_(comm.id, member_ranks_for(comm), options.max_incomplete_runs_per_comm),
        present_mask_(nm_) {
    for (std::size_t m = 0; m < nm_; ++m) {
      rank_calls_[m] = job.ranks[comm.members[m].rank_index].calls.data();
      member_ranks_[m] = comm.members[m].global_rank;
    }
  }

  void run() {
    while (fill_window()) {
      for (std::size_t row = 0; row < used_; ++row) {
        uint32_t* cells = &table_[row * nm_];
        if (!match_agreeing_row(cells, base_ + row)) match_row(cells, base_ + row);
      }
    }
    runs_.finish(out_.incomplete);
  }

 private:
  static std::vector<int32_t> member_ranks_for(const CommEntry& comm) {
    std::vector<int32_t> ranks;
    for (const auto& m : comm.members) ranks.push_back(m.global_rank);
    return ranks;
  }

  // Moves every member's next collectives with seq in [base, base + window) into the table,
  // base being the lowest seq not yet matched. False when every member's calls are used up.
  bool fill_window() {
    base_ = std::numeric_limits<uint64_t>::max();
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto& colls = comm_.members[m].colls;
      if (cursor_[m] < colls.size()) base_ = std::min(base_, rank_calls_[m][colls[cursor_[m]]].seq);
    }
    if (base_ == std::numeric_limits<uint64_t>::max()) return false;
    used_ = 0;
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto& colls = comm_.members[m].colls;
      const model::CallEvent* calls = rank_calls_[m];
      std::size_t c = cursor_[m];
      for (; c < colls.size(); ++c) {
        const uint64_t row = calls[colls[c]].seq - base_;
        if (row >= window_) break;
        uint32_t& cell = table_[row * nm_ + m];
        if (cell == kNone) {
          cell = colls[c];
        } else {
          ++summary_.duplicate_seqs;  // same seq twice on one rank: keep the first
        }
        used_ = std::max<std::size_t>(used_, row + 1);
      }
      cursor_[m] = c;
    }
    return true;
  }

  // Fast path (nearly every instance): everyone entered and agrees. One pass, no copies.
  bool match_agreeing_row(uint32_t* cells, uint64_t seq) {
    const model::CallEvent* first = nullptr;
    for (std::size_t m = 0; m < nm_; ++m) {
      if (cells[m] == kNone) return false;
      if (first == nullptr) {
        first = &rank_calls_[m][cells[m]];
      } else if (!DesyncCheck::agree(*first, rank_calls_[m][cells[m]])) {
        return false;
      }
    }
    add_instance(cells, seq, *first);
    return true;
  }

  // Some member is missing or disagrees: record the desync, then a complete instance (named
  // after the reference call) or one more incomplete instance of the current run.
  void match_row(uint32_t* cells, uint64_t seq) {
    present_calls_.clear();
    present_ranks_.clear();
    for (std::size_t m = 0; m < nm_; ++m) {
      const bool here = cells[m] != kNone;
      present_mask_[m] = here;
      if (here) {
        present_calls_.push_back(&rank_calls_[m][cells[m]]);
        present_ranks_.push_back(member_ranks_[m]);
      }
    }
    if (present_calls_.empty()) return;
    const std::size_t ref = desync_check_.check(present_calls_, present_ranks_, desync_);
    if (desync_) {
      ++summary_.desyncs;
      if (desyncs_listed_ < options_.max_desyncs_per_comm) {
        desync_->comm_id = comm_.id;
        desync_->seq = seq;
        out_.desyncs.push_back(std::move(*desync_));
        ++desyncs_listed_;
      }
    }
    const model::CallEvent& reference = *present_calls_[ref];
    if (present_calls_.size() == nm_) {
      add_instance(cells, seq, reference);
    } else {
      runs_.add(seq, reference.func, present_mask_);
      ++summary_.incomplete;
    }
    std::fill(cells, cells + nm_, kNone);
  }

  // A complete instance: every member's call, named after `reference`; the row is emptied.
  void add_instance(uint32_t* cells, uint64_t seq, const model::CallEvent& reference) {
    runs_.close();
    model::CollectiveInstance inst;
    inst.comm_id = comm_.id;
    inst.seq = seq;
    inst.func = reference.func;
    inst.bytes = reference.bytes();
    inst.first_member = static_cast<uint32_t>(out_.members.size());
    inst.nmembers = static_cast<uint32_t>(nm_);
    inst.expected = static_cast<uint32_t>(summary_.nranks);
    for (std::size_t m = 0; m < nm_; ++m) {
      out_.members.push_back(model::InstanceMember{comm_.members[m].rank_index, cells[m]});
      cells[m] = kNone;
    }
    out_.instances.push_back(inst);
    ++summary_.instances;
  }

  const CommEntry& comm_;
  const MatchOptions& options_;
  model::CommSummary& summary_;
  model::MatchResult& out_;
  const std::size_t nm_;
  const std::size_t window_;
  std::vector<const model::CallEvent*> rank_calls_;
  std::vector<int32_t> member_ranks_;
  std::vector<uint32_t> table_;
  std::vector<std::size_t> cursor_;
  uint64_t base_ = 0;
  std::size_t used_ = 0;
  IncompleteRuns runs_;
  DesyncCheck desync_check_;
  std::vector<const model::CallEvent*> present_calls_;
  std::vector<int32_t> present_ranks_;
  std::vector<uint8_t> present_mask_;
  std::optional<model::Desync> desync_;
  uint64_t desyncs_listed_ = 0;
};

}  // namespace

void match_collectives(const model::JobTrace& job, const CommEntry& comm,
                       const MatchOptions& options, model::CommSummary& summary,
                       model::MatchResult& out) {
  if (comm.members.empty()) return;
  WindowMatcher(job, comm, options, summary, out).run();
}

}  // namespace ncclwatch::match

// Converts a stream of records of one process into a model::RankTrace: unwraps sequence
// numbers, reassembles names, keeps comms, identity and clock anchors, and counts what it had to
// reject. Records go in chunk by chunk (no record is kept on the heap beyond its model event).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/job_trace.h"
#include "model/rank_trace.h"
#include "ncclwatch/format.h"
#include "trace/seq_unwrapper.h"
#include "trace/string_table.h"

namespace ncclwatch::trace {

// Records per kind, to size the model's vectors exactly before converting.
struct KindCounts {
  uint64_t by_kind[static_cast<std::size_t>(format::RecordKind::kCount) + 1] = {};
  void add(std::span<const format::Record> records);
  uint64_t operator[](format::RecordKind k) const { return by_kind[static_cast<std::size_t>(k)]; }
};

class RankBuilder {
 public:
  // `header` gives the identity the records may refine; `source` names the input in problems.
  RankBuilder(const format::TraceHeader& header, std::string source);

  void reserve(const KindCounts& counts);
  // Whether StepRecords go into RankTrace::steps (rank_loader.h says when they do anyway).
  void keep_steps(bool keep) { keep_steps_ = keep; }
  void add(std::span<const format::Record> records);
  // Sorts, resolves names, picks the timing source and wall offset; appends problem lines.
  model::RankTrace finish(std::vector<model::InputProblem>& problems);

 private:
  void classify_kernels();
  void add_one(const format::Record& record);
  // One per record kind that becomes part of the model (add_one dispatches).
  void add_call(const format::CallRecord& call);
  void add_in_flight(const format::InFlightRecord& in_flight);
  void add_comm(const format::CommRecord& comm);
  void add_identity(const format::IdentityRecord& identity);
  void add_clock(const format::ClockRecord& clock);
  void add_kernel(const format::KernelRecord& kernel);
  void add_returned(int64_t enter_ns, int64_t exit_ns, uint64_t comm_id, uint32_t tid,
                    uint32_t group_id, format::Func func);
  uint64_t unwrap_seq(uint64_t comm, format::Func func, int32_t peer, uint32_t seq);
  void note_skipped(const char* reason);
  void note_returned(const model::HookedCall& call);
  // Thread `tid` entered a hooked call at `enter_ns` (returned or seen in flight).
  void note_entry(uint32_t tid, int64_t enter_ns);
  void resolve_in_flight();
  void add_window(const format::WindowRecord& w);

  model::RankTrace trace_;
  bool keep_steps_ = false;
  bool whole_run_ = false;  // a whole-run window opened (its first record): steps are kept
  format::TraceHeader header_;
  SeqUnwrapper seqs_;
  StringTable strings_;
  std::unordered_map<uint64_t, std::size_t> comm_index_;
  // Best clock anchor so far: the one read in the narrowest window.
  uint32_t best_clock_window_ = UINT32_MAX;
  bool have_clock_ = false;
  uint64_t index_ = 0;  // records seen
  struct SkipReason {
    const char* reason;
    uint64_t count;
    uint64_t first_index;
  };
  std::vector<SkipReason> skipped_;
  // Entry evidence: in-flight records as read, and the entry times of every returned hooked call
  // that is not a CallEvent (groups, comms, comm ends, GetUniqueId) to tell which were superseded.
  std::vector<model::HookedCall> in_flight_;
  std::vector<int64_t> returned_enters_;
  // Per thread that called a hooked function: its latest entry time (a few threads: a vector).
  std::vector<std::pair<uint32_t, int64_t>> latest_entry_;
  // Per window (index in trace_.windows): the string id of its trigger text.
  std::vector<uint32_t> window_text_ids_;
};

}  // namespace ncclwatch::trace

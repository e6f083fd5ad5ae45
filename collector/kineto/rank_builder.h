// Turns a stream of Kineto trace events into a model::RankTrace: GPU activities, kernel
// launches, ProfilerStep ranges, and one CallEvent per `record_param_comms` CPU op tied to the
// NCCL kernel it launched.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kineto/trace_event.h"
#include "model/rank_trace.h"

namespace ncclwatch::kineto {

class RankTraceBuilder {
 public:
  explicit RankTraceBuilder(std::string source);

  void add(const TraceEvent& e);
  // The top-level `distributedInfo` object's JSON text.
  void set_distributed_info(std::string_view json);
  // The top-level `deviceProperties` array's JSON text (the GPUs of the node: id, name, ...).
  void set_device_properties(std::string_view json);

  // Links calls to kernels, assigns comm ids and sequence numbers, sorts. Call once.
  model::RankTrace finish();

  uint64_t gpu_events() const { return kernels_.size(); }
  uint64_t comm_ops() const { return ops_.size(); }
  // Complete events skipped for unusable times (see kMaxTsNs); the first one described.
  uint64_t bad_times() const { return bad_times_; }
  const std::string& first_bad_time() const { return first_bad_time_; }

  // Plausible times: timestamps from 0 to 2^62 ns (year 2116 as epoch time) and durations up to
  // 2^61 ns, so that ts + dur and the difference of any two fit in int64 (the analyses subtract
  // and add them freely). Beyond that a trace is corrupt, not a long run.
  static constexpr int64_t kMaxTsNs = int64_t{1} << 62;
  static constexpr int64_t kMaxDurNs = int64_t{1} << 61;
  const std::string& nccl_version() const { return trace_.info.nccl_version; }

 private:
  // A record_param_comms CPU op, before it becomes a CallEvent.
  struct CommOp {
    int64_t enter_ns = 0;
    int64_t exit_ns = 0;
    int64_t tid = 0;
    int64_t external_id = -1;
    int64_t in_nelems = -1;
    int64_t out_nelems = -1;
    int64_t group_size = -1;
    int64_t seq = -1;
    std::string collective;  // few per step: plain strings are fine
    std::string dtype;
    std::string pg_name;
    std::string pg_ranks;
  };
  struct Annotation {  // "nccl:<collective>" ranges: name the collective of older traces
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    int64_t tid = 0;
    int64_t external_id = -1;
    std::string name;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  uint32_t intern(std::string_view s);
  model::CommFamily family_of_name(uint32_t name);  // classified once per distinct name
  void promote_annotations();
  void sort_kernels();
  void link_kernels_to_calls();
  void describe_calls();
  void drop_anonymous_calls();
  bool times_usable(const TraceEvent& e);
  void add_step_range(const TraceEvent& e, int64_t end);
  void merge_gpu_steps();

  model::RankTrace trace_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> name_ids_;
  std::vector<model::CommFamily> family_of_name_;  // by name id; kCount = not classified yet
  std::vector<model::KernelEvent> kernels_;
  std::vector<int64_t> kernel_external_;  // External id per kernels_ entry
  std::vector<CommOp> ops_;
  std::vector<Annotation> annotations_;
  // ProfilerStep#N as a GPU-side annotation (gpu_user_annotation): Kineto writes these next to
  // the CPU range of the same step (later, when the GPU runs behind); one counts only for a step
  // number with no CPU range, where no CPU step range covers its time (merge_gpu_steps).
  std::vector<model::RangeEvent> gpu_steps_;
  uint64_t bad_times_ = 0;
  std::string first_bad_time_;
  int32_t trace_rank_ = -1;  // from args "Rank" when distributedInfo lacks it
  std::vector<std::pair<int64_t, std::string>> devices_;  // deviceProperties: (id, name)
};

}  // namespace ncclwatch::kineto

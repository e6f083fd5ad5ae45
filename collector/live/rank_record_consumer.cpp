#include "live/rank_record_consumer.h"

#include <algorithm>
#include <cstring>

#include "analysis/step_plan.h"
#include "trace/record_check.h"

namespace ncclwatch::live {

using format::Func;
using format::RecordKind;
using Lane = trace::SeqUnwrapper::Lane;

RankRecordConsumer::RankRecordConsumer(int64_t gpu_lag_ns) : gpu_(gpu_lag_ns) {}

void RankRecordConsumer::add(const format::Record& r) {
  ++m_.records;
  if (trace::record_problem(r) != nullptr) {
    ++m_.invalid_records;
    return;
  }
  switch (r.prefix.kind) {
    case RecordKind::kCall:
      on_call(r.call);
      break;
    case RecordKind::kComm:
      if (r.comm.prefix.u8b == 0 && r.comm.comm_id != 0) new_comms_.push_back(r.comm.comm_id);
      break;
    case RecordKind::kIdentity:
      if (r.identity.rank >= 0) m_.rank = r.identity.rank;
      if (r.identity.local_rank >= 0) m_.local_rank = r.identity.local_rank;
      break;
    case RecordKind::kKernel:
      on_kernel(r.kernel);
      break;
    case RecordKind::kKernelLink: {
      const auto& l = r.link;
      if (l.comm_id == 0 && l.group_id == 0) break;  // a launch outside any call
      if (l.correlation == 0) break;  // captured into a CUDA graph: no kernel of its own
      const uint64_t seq =
          l.comm_id != 0 ? seqs_.unwrap(l.comm_id, Lane::kCollective, -1, l.seq) : 0;
      links_.put(l.correlation, {l.comm_id, seq, l.group_id, l.stream, l.t_ns});
      break;
    }
    case RecordKind::kCollGpu: {
      const auto& g = r.coll_gpu;
      on_gpu_interval(g.comm_id, g.seq, g.group_id, g.stream, g.start_ns, g.end_ns);
      break;
    }
    case RecordKind::kString:
      on_string(r.string);
      break;
    case RecordKind::kNvtx: {
      const bool* step = step_names_.find(r.nvtx.name_id);
      if (step != nullptr && *step && r.nvtx.end_ns > r.nvtx.start_ns) {
        const double s = (r.nvtx.end_ns - r.nvtx.start_ns) * 1e-9;
        ++m_.steps;
        m_.step_s += s;
        m_.last_step_s = s;
      }
      break;
    }
    default:
      break;
  }
}

void RankRecordConsumer::on_call(const format::CallRecord& c) {
  const auto func = static_cast<Func>(c.prefix.u8a);
  MetricOp op{};
  if (!metric_op(func, &op)) return;
  const uint64_t bytes = format::call_bytes(c);
  ++m_.calls[static_cast<std::size_t>(op)];
  m_.bytes[static_cast<std::size_t>(op)] += bytes;
  if (!format::is_collective(func)) return;
  if (!gpu_timed_) m_.last_collective_end_ns = std::max(m_.last_collective_end_ns, c.t_exit_ns);
  if ((c.prefix.flags & (format::kCallNoKernel | format::kCallGraphCaptured)) != 0) return;
  const CallKey key{c.comm_id, seqs_.unwrap(c.comm_id, Lane::kCollective, -1, c.seq)};
  const CallInfo info{func, bytes};
  if (c.group_id != 0) {
    // The group's kernels are launched in ncclGroupEnd, after this record: remember the call.
    std::vector<GroupCall>* calls = groups_.find(c.group_id);
    if (calls == nullptr) calls = &groups_.put(c.group_id, {});
    if (calls->size() < 256) calls->push_back({key.first, key.second, c.stream});
  }
  if (const Interval* early = early_gpu_.find(key)) {
    const Interval iv = *early;
    early_gpu_.erase(key);
    gpu_done(key, info, iv.start, iv.end);
    return;
  }
  calls_.put(key, info);
}

void RankRecordConsumer::on_kernel(const format::KernelRecord& k) {
  has_kernels_ = true;
  const bool nccl = (k.prefix.flags & format::kKernelIsNccl) != 0;
  const auto activity = static_cast<format::ActivityKind>(k.prefix.u8a);
  gpu_.add(k.start_ns, k.end_ns,
           nccl ? GpuTimeTracker::Kind::kComm
                : (activity == format::ActivityKind::kKernel ? GpuTimeTracker::Kind::kCompute
                                                             : GpuTimeTracker::Kind::kOther));
  const Link* link = links_.find(k.correlation);
  if (link == nullptr) return;  // launched outside a call (non-blocking comms): not timed here
  const Link l = *link;
  links_.erase(k.correlation);  // whatever it was (a memset inside NCCL too), it is not pending
  if (!nccl) return;
  if (l.comm != 0) {
    const CallKey key{l.comm, l.seq};
    if (const CallInfo* call = calls_.find(key)) {
      const CallInfo info = *call;
      calls_.erase(key);
      gpu_done(key, info, k.start_ns, k.end_ns);
    } else {
      early_gpu_.put(key, {k.start_ns, k.end_ns});  // the call has not returned yet
    }
    return;
  }
  on_gpu_interval(0, 0, l.group_id, l.stream, k.start_ns, k.end_ns);
}

void RankRecordConsumer::on_gpu_interval(uint64_t comm, uint32_t seq_low, uint32_t group_id,
                                         uint64_t stream, int64_t start, int64_t end) {
  if (end < start) return;
  if (comm != 0) {
    const CallKey key{comm, seqs_.unwrap(comm, Lane::kCollective, -1, seq_low)};
    if (const CallInfo* call = calls_.find(key)) {
      const CallInfo info = *call;
      calls_.erase(key);
      gpu_done(key, info, start, end);
    } else {
      early_gpu_.put(key, {start, end});
    }
    return;
  }
  // A whole group's kernel on one stream: it is the GPU time of each of the group's calls there.
  std::vector<GroupCall>* calls = groups_.find(group_id);
  if (calls == nullptr) return;
  for (const GroupCall& g : *calls) {
    if (g.stream != stream) continue;
    const CallKey key{g.comm, g.seq};
    if (const CallInfo* call = calls_.find(key)) {
      const CallInfo info = *call;
      calls_.erase(key);
      gpu_done(key, info, start, end);
    }
  }
}

void RankRecordConsumer::gpu_done(const CallKey& key, const CallInfo& call, int64_t start,
                                  int64_t end) {
  MetricOp op{};
  if (!metric_op(call.func, &op) || static_cast<std::size_t>(op) >= kHistogramOps) return;
  const double s = (end - start) * 1e-9;
  GpuTimeHistogram& h = m_.gpu_time[static_cast<std::size_t>(op)][size_class(call.bytes)];
  ++h.buckets[bucket_index(s)];
  ++h.count;
  h.sum_s += s;
  gpu_timed_ = true;
  m_.last_collective_end_ns = std::max(m_.last_collective_end_ns, end);
  completed_.push_back({key.first, key.second, start, end});
}

void RankRecordConsumer::on_string(const format::StringRecord& s) {
  const uint32_t id = s.prefix.tid;
  std::string chunk(s.text, ::strnlen(s.text, sizeof s.text));
  std::string* partial = partial_strings_.find(id);
  std::string name = (partial != nullptr ? *partial : std::string()) + chunk;
  if ((s.prefix.flags & format::kStringLastChunk) == 0 &&
      s.prefix.u8a + 1u < format::kMaxStringChunks) {
    partial_strings_.put(id, std::move(name));
    return;
  }
  partial_strings_.erase(id);
  step_names_.put(id, analysis::StepDetector::looks_like_step(name));
}

}  // namespace ncclwatch::live

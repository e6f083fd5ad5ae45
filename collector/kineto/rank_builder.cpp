#include "kineto/rank_builder.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "kernels/comm_kernel_table.h"
#include "kernels/kernel_calls.h"
#include "kineto/collective_names.h"
#include "model/func_names.h"

namespace ncclwatch::kineto {
namespace {

using format::ActivityKind;
using format::Func;

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// A record_param_comms that is no collective: no known name and no NCCL kernel.
bool anonymous(const model::CallEvent& c) {
  return c.func == Func::kUnknown && c.kernel < 0;
}

}  // namespace

RankTraceBuilder::RankTraceBuilder(std::string source) {
  trace_.info.source = std::move(source);
  trace_.info.timing = model::TimingSource::kKineto;
}

uint32_t RankTraceBuilder::intern(std::string_view s) {
  if (s.empty()) return 0;
  auto it = name_ids_.find(s);
  if (it != name_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(trace_.names.size());
  trace_.names.emplace_back(s);
  name_ids_.emplace(std::string(s), id);
  return id;
}

// A complete event's times, checked before any arithmetic on them: NaN/Infinity, negative
// durations and timestamps near the int64 limit are counted and reported, not clamped.
bool RankTraceBuilder::times_usable(const TraceEvent& e) {
  const char* why = nullptr;
  if (e.bad_ts)
    why = "ts is not a finite number of microseconds (NaN, Infinity or out of range)";
  else if (e.bad_dur)
    why = "dur is not a finite number of microseconds (NaN, Infinity or out of range)";
  else if (e.ts_ns < 0 || e.ts_ns > kMaxTsNs)
    why = "implausible ts (negative or beyond year 2116 as epoch time)";
  else if (e.dur_ns < 0)
    why = "negative dur";
  else if (e.dur_ns > kMaxDurNs)
    why = "implausible dur (over 73 years)";
  if (why == nullptr) return true;
  if (bad_times_++ == 0)
    first_bad_time_ =
        fmt::format("event #{} '{}': {}", trace_.info.records, e.name.substr(0, 80), why);
  return false;
}

void RankTraceBuilder::add(const TraceEvent& e) {
  ++trace_.info.records;
  // Only complete ("X") events carry what we use.
  if (e.ph != "X" || !(e.has_ts || e.bad_ts) || !times_usable(e)) return;
  const int64_t end = e.ts_ns + e.dur_ns;  // both bounded by times_usable: no overflow
  const Category cat = e.category;
  if (cat == Category::kKernel || cat == Category::kMemcpy || cat == Category::kMemset) {
    model::KernelEvent k;
    k.start_ns = e.ts_ns;
    k.end_ns = end;
    // Kineto writes the CUDA stream both as args.stream and as the event's tid.
    const int64_t stream = e.stream >= 0 ? e.stream : e.tid;
    k.stream = static_cast<uint32_t>(stream < 0 ? 0 : stream);
    k.name = intern(e.name);
    k.correlation = e.correlation >= 0 ? static_cast<uint32_t>(e.correlation) : 0;
    k.bytes = e.bytes > 0 ? static_cast<uint64_t>(e.bytes) : 0;
    const int64_t device = e.device >= 0 ? e.device : e.pid;
    k.device = static_cast<int16_t>(device >= 0 && device < 32768 ? device : -1);
    k.kind = cat == Category::kKernel   ? ActivityKind::kKernel
             : cat == Category::kMemcpy ? ActivityKind::kMemcpy
                                        : ActivityKind::kMemset;
    if (k.kind == ActivityKind::kKernel) {
      k.family = family_of_name(k.name);
      k.nccl = k.family != model::CommFamily::kNone;
    }
    kernels_.push_back(k);
    kernel_external_.push_back(e.external_id);
    return;
  }
  if (trace_.info.pid == 0 && e.pid > 0 && (cat == Category::kCpuOp || cat == Category::kRuntime)) {
    trace_.info.pid = e.pid;  // the training process (GPU events use the device as pid)
  }
  if (cat == Category::kRuntime || cat == Category::kDriver) {
    if (e.correlation < 0) return;
    model::LaunchEvent l;
    l.enter_ns = e.ts_ns;
    l.exit_ns = end;
    l.correlation = static_cast<uint32_t>(e.correlation);
    l.tid = static_cast<uint32_t>(e.tid);
    trace_.launches.push_back(l);
    return;
  }
  if (e.name == "record_param_comms") {
    CommOp op;
    op.enter_ns = e.ts_ns;
    op.exit_ns = end;
    op.tid = e.tid;
    op.external_id = e.external_id;
    op.in_nelems = e.in_nelems;
    op.out_nelems = e.out_nelems;
    op.group_size = e.group_size;
    op.seq = e.seq;
    op.collective = e.collective;
    op.dtype = e.dtype;
    op.pg_name = e.pg_name;
    op.pg_ranks = e.pg_ranks;
    if (e.rank >= 0 && trace_rank_ < 0 && e.rank < INT32_MAX)
      trace_rank_ = static_cast<int32_t>(e.rank);
    ops_.push_back(std::move(op));
    return;
  }
  if (starts_with(e.name, "ProfilerStep#")) {
    add_step_range(e, end);
    return;
  }
  if (starts_with(e.name, "nccl:") && cat != Category::kGpuUserAnnotation) {
    annotations_.push_back(Annotation{e.ts_ns, end, e.tid, e.external_id, std::string(e.name)});
  }
}

model::CommFamily RankTraceBuilder::family_of_name(uint32_t name) {
  if (name >= family_of_name_.size()) family_of_name_.resize(name + 1, model::CommFamily::kCount);
  model::CommFamily& f = family_of_name_[name];
  if (f == model::CommFamily::kCount) f = kernels::classify_kernel(trace_.name_of(name)).family;
  return f;
}

// PyTorch before record_param_comms (1.8-1.12) names each collective only by its "nccl:<name>"
// op, which launched its kernel: with no record_param_comms in the trace, those ops are the
// calls. (With record_param_comms they are nested in it and only name it.)
void RankTraceBuilder::promote_annotations() {
  if (!ops_.empty()) return;
  for (const Annotation& a : annotations_) {
    CommOp op;
    op.enter_ns = a.start_ns;
    op.exit_ns = a.end_ns;
    op.tid = a.tid;
    op.external_id = a.external_id;
    op.collective = a.name;
    ops_.push_back(std::move(op));
  }
}

void RankTraceBuilder::add_step_range(const TraceEvent& e, int64_t end) {
  model::RangeEvent r;
  r.start_ns = e.ts_ns;
  r.end_ns = end;
  r.name = intern(e.name);
  r.tid = static_cast<uint32_t>(e.tid);
  if (e.category == Category::kGpuUserAnnotation)
    gpu_steps_.push_back(r);
  else
    trace_.ranges.push_back(r);
}

// A GPU-side ProfilerStep#N annotation is the same step as the CPU range named ProfilerStep#N:
// when the GPU runs behind the host it lies after that range (the last one after the last CPU
// step ended), so neither its time nor its position may make it a step of its own — counting it
// read 3 steps as 5. It stands in only for a step number that has no CPU range (a trace with
// only the GPU side, a step whose CPU range was cut off), and only where no CPU step range
// covers its time (its step would otherwise swallow a CPU step as "nested").
void RankTraceBuilder::merge_gpu_steps() {
  if (gpu_steps_.empty()) return;
  std::unordered_set<uint32_t> cpu_names;  // interned: the same name has the same id
  std::vector<std::pair<int64_t, int64_t>> cpu;
  cpu.reserve(trace_.ranges.size());
  for (const auto& r : trace_.ranges) {
    cpu_names.insert(r.name);
    cpu.emplace_back(r.start_ns, r.end_ns);
  }
  std::sort(cpu.begin(), cpu.end());
  // Running maximum of the ends, so one binary search answers "does any CPU range overlap?".
  std::vector<int64_t> max_end(cpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i)
    max_end[i] = std::max(cpu[i].second, i > 0 ? max_end[i - 1] : INT64_MIN);
  for (const auto& g : gpu_steps_) {
    if (cpu_names.count(g.name)) continue;
    // CPU ranges starting before the GPU range ends; any of them ending after it starts overlaps.
    const auto n = static_cast<std::size_t>(
        std::lower_bound(cpu.begin(), cpu.end(), std::make_pair(g.end_ns, INT64_MIN)) -
        cpu.begin());
    const bool overlapped = n > 0 && max_end[n - 1] > g.start_ns;
    if (!overlapped) trace_.ranges.push_back(g);
  }
  gpu_steps_.clear();
}

void RankTraceBuilder::set_distributed_info(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element info;
  if (parser.parse(json.data(), json.size(), true).get(info)) return;
  int64_t v;
  if (!info["rank"].get_int64().get(v) && v >= 0 && v < INT32_MAX)
    trace_.info.rank = static_cast<int32_t>(v);
  if (!info["world_size"].get_int64().get(v) && v > 0 && v < INT32_MAX)
    trace_.info.world_size = static_cast<int32_t>(v);
  std::string_view s;
  if (!info["nccl_version"].get_string().get(s)) trace_.info.nccl_version = std::string(s);
}

void RankTraceBuilder::set_device_properties(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::array list;
  if (parser.parse(json.data(), json.size(), true).get(list)) return;
  for (simdjson::dom::element d : list) {
    int64_t id = -1;
    std::string_view name;
    if (d["name"].get_string().get(name) || name.empty()) continue;
    if (d["id"].get_int64().get(id)) id = -1;
    if (devices_.size() < 64) devices_.emplace_back(id, std::string(name.substr(0, 128)));
  }
}

void RankTraceBuilder::sort_kernels() {
  std::vector<uint32_t> order(kernels_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [this](uint32_t a, uint32_t b) {
    return kernels_[a].start_ns < kernels_[b].start_ns;
  });
  trace_.kernels.reserve(kernels_.size());
  std::vector<int64_t> external(kernels_.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    trace_.kernels.push_back(kernels_[order[i]]);
    external[i] = kernel_external_[order[i]];
  }
  kernel_external_ = std::move(external);
  kernels_.clear();
  kernels_.shrink_to_fit();
}

// Each NCCL kernel belongs to the record_param_comms op that launched it. Newer PyTorch gives
// the kernel that op's "External id"; older traces give each launch its own id, and there the
// kernel's correlation leads to its launch (cudaLaunchKernel), whose enclosing record_param_comms
// on the same thread is the op. (The ac2g flow events carry the same correlation ids.)
void RankTraceBuilder::link_kernels_to_calls() {
  std::unordered_map<int64_t, uint32_t> op_by_external;
  std::map<int64_t, std::vector<uint32_t>> ops_by_tid;  // ops sorted by enter within a thread
  for (uint32_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].external_id >= 0) op_by_external.emplace(ops_[i].external_id, i);
    ops_by_tid[ops_[i].tid].push_back(i);
  }
  std::unordered_map<uint32_t, uint32_t> launch_by_corr;
  for (uint32_t i = 0; i < trace_.launches.size(); ++i)
    launch_by_corr.emplace(trace_.launches[i].correlation, i);

  auto enclosing_op = [&](const model::LaunchEvent& l) -> int32_t {
    auto it = ops_by_tid.find(static_cast<int64_t>(l.tid));
    if (it == ops_by_tid.end()) return -1;
    const auto& v = it->second;
    // Innermost op containing the launch: the latest-starting one that still covers it.
    auto pos = std::upper_bound(v.begin(), v.end(), l.enter_ns,
                                [this](int64_t t, uint32_t op) { return t < ops_[op].enter_ns; });
    for (int back = 0; pos != v.begin() && back < 8; ++back) {
      --pos;
      if (ops_[*pos].exit_ns >= l.enter_ns) return static_cast<int32_t>(*pos);
    }
    return -1;
  };

  for (uint32_t k = 0; k < trace_.kernels.size(); ++k) {
    model::KernelEvent& kern = trace_.kernels[k];
    if (!kern.nccl) continue;
    int32_t op = -1;
    auto ext = op_by_external.find(kernel_external_[k]);
    // (A kernel cannot start before its op began; this guards against an old-style trace whose
    // correlation-numbered External id happens to equal some op's id.)
    // Old traces number a kernel's External id like its correlation: no op id at all then.
    const bool own_id = kernel_external_[k] != static_cast<int64_t>(kern.correlation);
    if (own_id && ext != op_by_external.end() && kern.start_ns >= ops_[ext->second].enter_ns) {
      op = static_cast<int32_t>(ext->second);
    } else if (auto l = launch_by_corr.find(kern.correlation); l != launch_by_corr.end()) {
      op = enclosing_op(trace_.launches[l->second]);
    }
    if (op < 0) continue;
    kern.call = op;
    model::CallEvent& c = trace_.calls[static_cast<std::size_t>(op)];
    if (c.kernel < 0) {
      c.kernel = static_cast<int32_t>(k);
      c.gpu_start_ns = kern.start_ns;
      c.gpu_end_ns = kern.end_ns;
    } else {  // a coalesced op launching several kernels: its GPU interval spans them all
      c.gpu_start_ns = std::min(c.gpu_start_ns, kern.start_ns);
      c.gpu_end_ns = std::max(c.gpu_end_ns, kern.end_ns);
    }
  }
}

// The lane of an op matched by order of appearance when the trace has neither sequence numbers
// nor process groups: its kind, and its count for the kinds whose members all pass the same one
// (an all-to-all's or a send's count may differ from rank to rank).
namespace {
std::string order_lane(Func f, uint64_t count) {
  const std::string name = model::func_name(f);
  switch (f) {
    case Func::kAllReduce:
    case Func::kBroadcast:
    case Func::kReduce:
    case Func::kAllGather:
    case Func::kReduceScatter:
      return name + " x" + std::to_string(count);
    default:
      return name;
  }
}
}  // namespace

// Function, sizes, comm and sequence number of each call.
void RankTraceBuilder::describe_calls() {
  std::map<int64_t, std::vector<const Annotation*>> ann_by_tid;
  for (const auto& a : annotations_) ann_by_tid[a.tid].push_back(&a);
  for (auto& [tid, v] : ann_by_tid)
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });

  struct Group {
    uint64_t id;
    uint64_t next_seq = 0;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  const int32_t my_rank = trace_.info.rank;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const CommOp& op = ops_[i];
    model::CallEvent& c = trace_.calls[i];
    Func f = func_from_collective_name(op.collective);
    if (f == Func::kUnknown) {  // older PyTorch: the nested "nccl:<name>" annotation names it
      auto it = ann_by_tid.find(op.tid);
      if (it != ann_by_tid.end()) {
        auto pos = std::lower_bound(it->second.begin(), it->second.end(), op.enter_ns,
                                    [](const Annotation* a, int64_t t) { return a->start_ns < t; });
        if (pos != it->second.end() && (*pos)->start_ns <= op.exit_ns)
          f = func_from_collective_name((*pos)->name);
      }
    }
    if (f == Func::kUnknown && c.kernel >= 0)
      f = func_from_kernel_name(
          trace_.name_of(trace_.kernels[static_cast<std::size_t>(c.kernel)].name));
    c.func = f;
    if (anonymous(c)) continue;  // dropped afterwards; takes no sequence number
    c.datatype = datatype_from_dtype(op.dtype);
    int64_t count = op.in_nelems;
    if (f == Func::kReduceScatter || f == Func::kRecv || count < 0) count = op.out_nelems;
    if (count < 0) count = op.in_nelems;
    c.count = count > 0 ? static_cast<uint64_t>(count) : 0;

    // Without PyTorch's sequence number and process-group arguments, order of appearance is
    // trustworthy only among ops every rank issues alike: the same kind (and, where every member
    // passes the same count, the same count). Each such lane numbers its own ops, so a profiler
    // window that cut or left out an op of one kind on one rank does not pair an all-reduce
    // with an all-to-all (a false desync); ops that disagree within a lane still do.
    const std::string lane = op.seq < 0 && op.pg_name.empty() && op.pg_ranks.empty()
                                 ? order_lane(f, c.count)
                                 : std::string();
    auto [it, fresh] = groups.try_emplace({op.pg_name, op.pg_ranks + lane}, Group{0});
    if (fresh) {
      const std::vector<int32_t> ranks = parse_rank_list(op.pg_ranks);
      it->second.id = lane.empty() ? comm_id_for_group(op.pg_name, ranks)
                                   : comm_id_for_group("no process group: " + lane, ranks);
      model::CommInfo comm;
      comm.id = it->second.id;
      comm.name = lane.empty() ? op.pg_name : "(no process group) " + lane;
      // A lane's members are the ranks whose window holds one of its ops: its size is unknown
      // (0), so a rank whose window cut them is no "member that left no trace".
      comm.nranks = !lane.empty() ? 0
                    : op.group_size > 0 && op.group_size < INT32_MAX
                        ? static_cast<int32_t>(op.group_size)
                    : !ranks.empty() ? static_cast<int32_t>(ranks.size())
                                     : trace_.info.world_size;
      comm.rank = my_rank;
      if (!ranks.empty()) {
        auto r = std::find(ranks.begin(), ranks.end(), my_rank);
        comm.rank = r == ranks.end() ? -1 : static_cast<int32_t>(r - ranks.begin());
      }
      comm.created_ns = op.enter_ns;
      trace_.comms.push_back(std::move(comm));
    }
    c.comm_id = it->second.id;
    // PyTorch's own per-group sequence number when the trace has it, else order of appearance
    // (every rank issues a group's collectives in the same order).
    c.seq = op.seq >= 0 ? static_cast<uint64_t>(op.seq) : it->second.next_seq;
    it->second.next_seq = c.seq + 1;
  }
}

// Older PyTorch writes a second, argument-less record_param_comms after each collective (from
// the work's completion), newer ones one named "wait"; with no collective name and no kernel
// they say nothing a matcher or an analysis could use, so they are dropped rather than shown
// as unknown collectives.
void RankTraceBuilder::drop_anonymous_calls() {
  std::vector<int32_t> new_index(trace_.calls.size(), -1);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < trace_.calls.size(); ++i) {
    const model::CallEvent& c = trace_.calls[i];
    if (anonymous(c)) continue;
    new_index[i] = static_cast<int32_t>(kept);
    trace_.calls[kept++] = c;
  }
  trace_.calls.resize(kept);
  for (auto& k : trace_.kernels)
    if (k.call >= 0) k.call = new_index[static_cast<std::size_t>(k.call)];
}

model::RankTrace RankTraceBuilder::finish() {
  if (trace_.info.rank < 0) trace_.info.rank = trace_rank_;
  promote_annotations();
  sort_kernels();
  std::stable_sort(ops_.begin(), ops_.end(),
                   [](const CommOp& a, const CommOp& b) { return a.enter_ns < b.enter_ns; });
  trace_.calls.resize(ops_.size());
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    model::CallEvent& c = trace_.calls[i];
    c.enter_ns = ops_[i].enter_ns;
    c.exit_ns = ops_[i].exit_ns;
  }
  link_kernels_to_calls();
  describe_calls();
  drop_anonymous_calls();
  // Keep only the launches of GPU work we kept (the trace has many other runtime calls).
  std::unordered_set<uint32_t> gpu_corr;
  gpu_corr.reserve(trace_.kernels.size());
  for (const auto& k : trace_.kernels)
    if (k.correlation != 0) gpu_corr.insert(k.correlation);
  std::erase_if(trace_.launches,
                [&](const model::LaunchEvent& l) { return !gpu_corr.count(l.correlation); });
  std::stable_sort(trace_.launches.begin(), trace_.launches.end(),
                   [](const auto& a, const auto& b) { return a.enter_ns < b.enter_ns; });
  // Communication kernels no collective op launched (DeepEP, custom all-reduce, ...) get calls.
  kernels::add_kernel_calls(trace_);
  merge_gpu_steps();
  std::stable_sort(trace_.ranges.begin(), trace_.ranges.end(),
                   [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  for (const auto& k : trace_.kernels) {
    if (k.device >= 0) {
      trace_.info.device = k.device;
      break;
    }
  }
  // The rank's own GPU among the node's; the first when its device is not listed.
  for (const auto& [id, name] : devices_) {
    if (trace_.info.gpu_name.empty() || id == trace_.info.device) trace_.info.gpu_name = name;
  }
  ops_.clear();
  annotations_.clear();
  return std::move(trace_);
}

}  // namespace ncclwatch::kineto

#include "training_rank_writer.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <vector>

#include "record_builder.h"

namespace ncclwatch::bench {

namespace {

namespace ts = test_support;
using format::Record;

constexpr uint64_t kWorldComm = 0x3c5e1d2f00a1b2c4ULL;
constexpr uint64_t kNcclStream = 0x55d0c0a3e160ULL;  // the NCCL stream DDP made
constexpr uint64_t kComputeStream = 0;               // PyTorch's default stream
constexpr uint32_t kComputeStreamId = 7;             // CUPTI's stream ids
constexpr uint32_t kNcclStreamId = 13;
constexpr int64_t kWallBase = 1'760'000'000'000'000'000;
constexpr int64_t kClockEveryNs = 1'000'000'000;  // the drain thread's clock anchors
constexpr uint32_t kClockWindowNs = 40;           // how long reading the two clocks took
constexpr uint8_t kBf16 = 9;

uint32_t saturated_us(int64_t ns) {
  return static_cast<uint32_t>(
      std::clamp<int64_t>(ns / 1000, 0, int64_t{std::numeric_limits<uint32_t>::max()} - 1));
}

int64_t clipped(int64_t start, int64_t end, int64_t a, int64_t z) {
  return std::max<int64_t>(0, std::min(end, z) - std::max(start, a));
}

}  // namespace

TrainingRankWriter::TrainingRankWriter(const TrainingTimeline& timeline, int rank)
    : timeline_(timeline),
      job_(timeline.job()),
      rank_(rank),
      host_(rank / timeline.job().ranks_per_host),
      tid_(static_cast<uint32_t>(10000 + rank)),
      clock_shift_(int64_t{rank / timeline.job().ranks_per_host} * 7'000'000'000 + 3'000'000'000),
      wall_offset_(kWallBase +
                   (int64_t{rank / timeline.job().ranks_per_host} * 37 % 11 - 5) * 10'000),
      name_ids_(TrainingTimeline::kernel_names().size() + 2, 0) {}

std::string TrainingRankWriter::path() const {
  char name[96];
  std::snprintf(name, sizeof name, "/ncclwatch.node%03d.%u.trace", host_, tid_);
  return job_.dir + name;
}

void TrainingRankWriter::put(const Record& r) {
  if (format::is_detail_kind(r.prefix.kind)) ++detail_records_;
  out_->put(r);
}

uint32_t TrainingRankWriter::name_id(uint32_t name) {
  uint32_t& id = name_ids_.at(name);
  if (id == 0) {
    const auto& names = TrainingTimeline::kernel_names();
    id = next_string_++;
    put_string(*out_, id,
               name < names.size()    ? names[name]
               : name == names.size() ? TrainingTimeline::allreduce_kernel_name()
                                      : TrainingTimeline::broadcast_kernel_name());
  }
  return id;
}

void TrainingRankWriter::put_start() {
  const int64_t t0 = 1'000'000'000;
  put_clock(t0);
  next_clock_ns_ = t0 + kClockEveryNs;
  put(ts::window_record({.trigger = format::WindowTrigger::kWholeRun,
                         .event = format::WindowEvent::kOpen,
                         .start_ns = host_clock(t0),
                         .first_step = 0,
                         .end_step = format::kNoStep}));
  char pci_bus_id[16];
  std::snprintf(pci_bus_id, sizeof pci_bus_id, "0000:%02x:00.0",
                0x18 + 0x10 * (rank_ % job_.ranks_per_host));
  put(ts::identity_record({.tid = tid_,
                           .source = format::RankSource::kEnv,
                           .rank = rank_,
                           .world = job_.ranks,
                           .local_rank = rank_ % job_.ranks_per_host,
                           .device = rank_ % job_.ranks_per_host,
                           .pci_bus_id = pci_bus_id}));
  if (rank_ == 0) {
    put(ts::unique_id_record({.tid = tid_,
                              .enter_ns = host_clock(t0 + 50'000),
                              .exit_ns = host_clock(t0 + 60'000),
                              .hash = kWorldComm}));
  }
  put(ts::comm_record({.tid = tid_,
                       .created_by = format::Func::kCommInitRank,
                       .enter_ns = host_clock(t0 + 100'000),
                       .exit_ns = host_clock(1'019'000'000),
                       .comm = kWorldComm,
                       .handle = 0x55d0c0a30000ULL + static_cast<uint64_t>(rank_) * 0x100,
                       .nranks = job_.ranks,
                       .rank = rank_,
                       .device = rank_ % job_.ranks_per_host}));
  on_cpu_ns_ = 900'000'000;
  wait_ns_ = 2'000'000;
  timeslices_ = 40;
  put(ts::sched_record(tid_, host_clock(1'019'500'000), on_cpu_ns_, wait_ns_, timeslices_));
  // DDP's constructor: the parameters' broadcast from rank 0 (seq 0).
  BucketSlot b = timeline_.broadcast(rank_);
  b.correlation = next_correlation_++;  // its link, launch and kernel
  put_collective(format::Func::kBroadcast, b, 0, static_cast<uint64_t>(job_.bucket_bytes) / 2, 0);
  put_kernel(b.start, b.end, b.correlation,
             static_cast<uint32_t>(TrainingTimeline::kernel_names().size() + 1), true);
}

void TrainingRankWriter::put_clock(int64_t t) {
  put(ts::clock_record(host_clock(t), t + wall_offset_, kClockWindowNs));
}

void TrainingRankWriter::put_kernel(int64_t start, int64_t end, uint32_t correlation, uint32_t name,
                                    bool nccl) {
  put(ts::kernel_record({.stream_id = nccl ? kNcclStreamId : kComputeStreamId,
                         .device = static_cast<uint8_t>(rank_ % job_.ranks_per_host),
                         .nccl = nccl,
                         .start_ns = host_clock(start),
                         .end_ns = host_clock(end),
                         .correlation = correlation,
                         .name_id = name_id(name),
                         .context_id = 1}));
}

void TrainingRankWriter::put_collective(format::Func func, const BucketSlot& b, uint32_t seq,
                                        uint64_t count, int32_t peer) {
  put(ts::link_record({.tid = tid_,
                       .func = func,
                       .t_ns = host_clock(b.launch_enter + 30),
                       .comm = kWorldComm,
                       .stream = kNcclStream,
                       .correlation = b.correlation,
                       .seq = seq}));
  put(ts::launch_record({.tid = tid_,
                         .api = format::LaunchApi::kDriverKernel,
                         .enter_ns = host_clock(b.launch_enter),
                         .exit_ns = host_clock(b.launch_exit),
                         .stream = kNcclStream,
                         .correlation = b.correlation}));
  put(ts::call_record({.tid = tid_,
                       .func = func,
                       .enter_ns = host_clock(b.call_enter),
                       .exit_ns = host_clock(b.call_exit),
                       .comm = kWorldComm,
                       .count = count,
                       .stream = kNcclStream,
                       .seq = seq,
                       .peer = peer,
                       .datatype = kBf16}));
}

// The host's records of a step in the order the drain thread gets them: a launch when its API
// call returns; an all-reduce's kernel link (made inside the launch), its launch, then the call
// itself when it returns.
void TrainingRankWriter::put_host_records(RankStep& st) {
  while (st.host_start >= next_clock_ns_) {
    put_clock(next_clock_ns_);
    next_clock_ns_ += kClockEveryNs;
  }
  // The NCCL thread's scheduling: a sample per step (the drain thread writes one whenever the
  // wait grew, which on a busy host is about every step).
  on_cpu_ns_ += static_cast<uint64_t>(st.host_end - st.host_start) / 3;
  wait_ns_ += 20'000 + static_cast<uint64_t>(st.step % 7) * 3'000;
  timeslices_ += 25;
  put(ts::sched_record(tid_, host_clock(st.host_start + 1'000), on_cpu_ns_, wait_ns_, timeslices_));

  std::size_t next_bucket = 0;
  const auto put_bucket = [&](BucketSlot& b) {
    b.correlation = next_correlation_++;
    const uint32_t seq =
        static_cast<uint32_t>(1 + static_cast<uint64_t>(st.step) * job_.buckets + next_bucket);
    put_collective(format::Func::kAllReduce, b, seq,
                   timeline_.bucket_count(static_cast<int>(next_bucket)), -1);
    ++next_bucket;
  };
  for (KernelSlot& k : st.compute) {
    while (next_bucket < st.buckets.size() && st.buckets[next_bucket].call_enter < k.launch_enter)
      put_bucket(st.buckets[next_bucket]);
    k.correlation = next_correlation_++;
    put(ts::launch_record({.tid = tid_,
                           .api = format::LaunchApi::kRuntimeKernel,
                           .enter_ns = host_clock(k.launch_enter),
                           .exit_ns = host_clock(k.launch_exit),
                           .stream = kComputeStream,
                           .correlation = k.correlation}));
  }
  while (next_bucket < st.buckets.size()) put_bucket(st.buckets[next_bucket]);
}

// A step's GPU records as CUPTI hands them over: in order of completion, names first.
void TrainingRankWriter::put_gpu_batch(const RankStep& st) {
  struct Gpu {
    int64_t start, end;
    uint32_t correlation, name;
    bool nccl;
  };
  std::vector<Gpu> batch;
  batch.reserve(st.compute.size() + st.buckets.size());
  for (const auto& k : st.compute) batch.push_back({k.start, k.end, k.correlation, k.name, false});
  const auto allreduce = static_cast<uint32_t>(TrainingTimeline::kernel_names().size());
  for (const auto& b : st.buckets)
    batch.push_back({b.start, b.end, b.correlation, allreduce, true});
  std::stable_sort(batch.begin(), batch.end(),
                   [](const Gpu& a, const Gpu& b) { return a.end < b.end; });
  for (const auto& g : batch) name_id(g.name);
  for (const auto& g : batch) put_kernel(g.start, g.end, g.correlation, g.name, g.nccl);
}

// PyTorch's profiler marks each step with an NVTX range "ProfilerStep#N" (a new name per step).
void TrainingRankWriter::put_step_range(const RankStep& st) {
  const uint32_t id = next_string_++;
  put_string(*out_, id, "ProfilerStep#" + std::to_string(st.step));
  put(ts::nvtx_record(tid_, host_clock(st.host_start), host_clock(st.host_end), id));
}

// What the drain thread's summarizer makes of the step (step_summarizer.h): GPU figures are
// unions of the kernels' intervals clipped to the step.
Record TrainingRankWriter::step_summary(const RankStep& st, bool last) const {
  const int64_t a = st.host_start, z = st.host_end;
  int64_t compute = 0, comm = 0, both = 0;
  for (const auto& k : st.compute) compute += clipped(k.start, k.end, a, z);
  for (const auto& b : st.buckets) comm += clipped(b.start, b.end, a, z);
  // Each stream runs one kernel at a time: overlap of two sorted lists of disjoint intervals.
  std::size_t i = 0, j = 0;
  while (i < st.compute.size() && j < st.buckets.size()) {
    const auto& k = st.compute[i];
    const auto& b = st.buckets[j];
    both += clipped(std::max(k.start, b.start), std::min(k.end, b.end), a, z);
    if (k.end < b.end)
      ++i;
    else
      ++j;
  }
  uint64_t bytes = 0;
  for (int b = 0; b < job_.buckets; ++b) bytes += timeline_.bucket_count(b) * 2;
  return ts::step_record(
      {.ref_seq = 1 + static_cast<uint32_t>(st.step) * job_.buckets,
       .source = format::StepSource::kNvtx,
       .timing = format::StepTiming::kCupti,
       .flags = static_cast<uint8_t>(format::kStepDetail | (last ? format::kStepLast : 0)),
       .step = static_cast<uint32_t>(st.step),
       .calls = static_cast<uint32_t>(job_.buckets),
       .start_ns = host_clock(a),
       .arrive_ns = host_clock(st.buckets.front().call_enter),
       .sync_ns = host_clock(st.buckets.front().end),
       .duration_us = saturated_us(z - a),
       .compute_us = saturated_us(compute),
       .exposed_us = saturated_us(comm - both),
       .idle_us = saturated_us((z - a) - (compute + comm - both)),
       .bytes = bytes});
}

void TrainingRankWriter::put_end(int64_t last_ns) {
  put(ts::comm_end_record(tid_, kWorldComm, host_clock(last_ns + 100'000),
                          host_clock(last_ns + 900'000)));
  put(ts::window_record({.trigger = format::WindowTrigger::kWholeRun,
                         .event = format::WindowEvent::kClose,
                         .start_ns = host_clock(1'000'000'000),
                         .end_ns = host_clock(last_ns + 1'000'000),
                         .first_step = 0,
                         .end_step = static_cast<uint64_t>(job_.steps),
                         .detail_records = detail_records_}));
}

TrainingJobFiles TrainingRankWriter::write() {
  format::ProcessInfo p{};
  std::snprintf(p.job, sizeof p.job, "%s", job_.job.c_str());
  std::snprintf(p.host, sizeof p.host, "node%03d", host_);
  p.pid = tid_;
  p.rank = rank_;
  p.world_size = job_.ranks;
  p.local_rank = rank_ % job_.ranks_per_host;
  p.device = rank_ % job_.ranks_per_host;
  p.start_monotonic_ns = host_clock(1'000'000'000);
  p.start_realtime_ns = 1'000'000'000 + wall_offset_;
  format::TraceHeader h = format::trace_header(format::kTraceStateOpen, p);
  h.mode = 1;  // full: CUPTI
  TraceFileWriter file(path(), h, 4096);
  out_ = &file;
  put_start();
  // Two steps in hand: this one's host records, the previous one's GPU records and range; its
  // summary waits for one more batch (the summarizer waits for a GPU record after its end).
  RankStep cur, prev;
  Record pending{};
  bool have_pending = false;
  int64_t start = timeline_.first_step_start(rank_);
  for (int s = 0; s < job_.steps; ++s) {
    timeline_.plan(rank_, s, start, cur);
    start = cur.host_end;
    put_host_records(cur);
    if (s > 0) {
      put_gpu_batch(prev);
      put_step_range(prev);
      if (have_pending) put(pending);
      pending = step_summary(prev, false);
      have_pending = true;
    }
    std::swap(cur, prev);
  }
  put_gpu_batch(prev);
  put_step_range(prev);
  if (have_pending) put(pending);
  put(step_summary(prev, true));
  put_end(prev.host_end);
  out_ = nullptr;
  TrainingJobFiles done;
  done.records = file.count();
  done.bytes = file.finish();
  done.files = 1;
  return done;
}

TrainingJobFiles write_training_job(const TrainingTimeline& timeline) {
  TrainingJobFiles all;
  for (int r = 0; r < timeline.job().ranks; ++r) {
    const TrainingJobFiles one = TrainingRankWriter(timeline, r).write();
    all.bytes += one.bytes;
    all.records += one.records;
    all.files += one.files;
  }
  return all;
}

}  // namespace ncclwatch::bench

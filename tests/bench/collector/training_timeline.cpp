#include "training_timeline.h"

#include <algorithm>
#include <stdexcept>

namespace ncclwatch::bench {

namespace {

// Host costs (fake_train and the real shim's traces show the same magnitudes): a launch call,
// the framework's work between two ops, an NCCL call, the GPU's launch latency.
constexpr int64_t kLaunchNs = 4'000;
constexpr int64_t kOpGapNs = 12'000;
constexpr int64_t kCallNs = 25'000;
constexpr int64_t kGpuLatencyNs = 3'000;
constexpr int64_t kDataLoadNs = 200'000;  // per step before the forward (input batch, H2D copy)
constexpr int64_t kSyncNs = 30'000;       // loss.item() returning, profiler step, logging
constexpr int64_t kMaxSkewNs = 4'000;     // ranks see an all-reduce's end this far apart

// Draw streams (the first coordinate of draw()).
enum Stream : uint64_t { kKernel = 1, kHost, kCall, kTransfer, kSkew, kStart };

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

const std::vector<std::string>& TrainingTimeline::kernel_names() {
  // A transformer's kernels as CUPTI names them (a few families; a real model has dozens).
  static const std::vector<std::string> names = {
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
      "segment_k_off_kernel__5x_cublas",
      "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_"
      "t>, false, true, false, false, true, true, false, false>",
      "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
      "segment_k_off_kernel__5x_cublas",
      "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8>>",
      "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl>",
      "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<c10::BFloat16, float>",
      "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
      "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor"
      "<c10::BFloat16, 4>>",
  };
  return names;
}

const char* TrainingTimeline::allreduce_kernel_name() {
  return "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
}

const char* TrainingTimeline::broadcast_kernel_name() {
  return "ncclDevKernel_Broadcast_RING_LL";
}

double TrainingTimeline::draw(uint64_t a, uint64_t b, uint64_t c, uint64_t d) const {
  uint64_t x = splitmix64(job_.seed ^ (a << 56));
  x = splitmix64(x ^ b);
  x = splitmix64(x ^ (c << 20));
  x = splitmix64(x ^ d);
  return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
}

double TrainingTimeline::jittered(double v, uint64_t a, uint64_t b, uint64_t c, uint64_t d) const {
  return v * (1.0 + job_.jitter * (2.0 * draw(a, b, c, d) - 1.0));
}

int64_t TrainingTimeline::end_skew(int rank, int step, int bucket) const {
  return static_cast<int64_t>(draw(kSkew, static_cast<uint64_t>(rank), static_cast<uint64_t>(step),
                                   static_cast<uint64_t>(bucket)) *
                              kMaxSkewNs);
}

uint64_t TrainingTimeline::bucket_count(int b) const {
  // DDP's last bucket holds what is left: smaller.
  const uint64_t full = static_cast<uint64_t>(job_.bucket_bytes) / 2;
  return b + 1 == job_.buckets ? full * 3 / 5 : full;
}

TrainingTimeline::TrainingTimeline(const TrainingJob& job) : job_(job) {
  const int compute = job.kernels_per_step - job.optimizer_kernels;
  if (job.ranks < 1 || job.ranks_per_host < 1 || job.steps < 1 || job.buckets < 1 ||
      job.optimizer_kernels < 1 || compute < 3 || job.bucket_bytes < 2 ||
      job.bus_bytes_per_ns <= 0 || job.jitter < 0 || job.jitter >= 1 || job.stall_every < 1) {
    throw std::invalid_argument("training job: parameters out of range");
  }
  forward_kernels_ = compute / 3;
  backward_kernels_ = compute - forward_kernels_;
  if (backward_kernels_ < job.buckets)
    throw std::invalid_argument("training job: fewer backward kernels than buckets");
  // Nominal durations: every fourth kernel a GEMM-sized one (4x), the rest elementwise-sized;
  // each phase scaled to its total.
  const auto phase = [this](int n, int64_t total) {
    double weights = 0;
    for (int i = 0; i < n; ++i) weights += i % 4 == 0 ? 4.0 : 1.0;
    for (int i = 0; i < n; ++i)
      kernel_ns_.push_back(std::max<int64_t>(
          1000,
          static_cast<int64_t>(static_cast<double>(total) * (i % 4 == 0 ? 4.0 : 1.0) / weights)));
  };
  phase(forward_kernels_, job.forward_ns);
  phase(backward_kernels_, 2 * job.forward_ns);
  phase(job.optimizer_kernels, job.optimizer_ns);
  for (int b = 0; b < job.buckets; ++b)
    bucket_after_.push_back((b + 1) * backward_kernels_ / job.buckets - 1);

  // Set-up: comm init, then the parameters' broadcast from rank 0 (every rank's starts apart).
  const auto ranks = static_cast<std::size_t>(job.ranks);
  int64_t latest = 0;
  for (int r = 0; r < job.ranks; ++r) latest = std::max(latest, broadcast(r).start);
  broadcast_end_ =
      latest + static_cast<int64_t>(static_cast<double>(job.bucket_bytes) / job.bus_bytes_per_ns);
  first_start_.resize(ranks);
  for (int r = 0; r < job.ranks; ++r)
    first_start_[static_cast<std::size_t>(r)] =
        broadcast(r).end + 500'000 +
        static_cast<int64_t>(draw(kStart, static_cast<uint64_t>(r), 1, 0) * 100'000);

  // Every rank, step by step: an instance ends when its latest rank started it plus the transfer.
  instance_end_.assign(static_cast<std::size_t>(job.steps) * static_cast<std::size_t>(job.buckets),
                       0);
  std::vector<int64_t> start = first_start_;
  std::vector<RankStep> alone(ranks);
  for (int s = 0; s < job.steps; ++s) {
    for (int r = 0; r < job.ranks; ++r)
      plan_alone(r, s, start[static_cast<std::size_t>(r)], alone[static_cast<std::size_t>(r)],
                 false);
    int64_t* ends = &instance_end_[static_cast<std::size_t>(s) * job.buckets];
    for (int b = 0; b < job.buckets; ++b) {
      int64_t last = 0;
      for (int r = 0; r < job.ranks; ++r) {
        const RankStep& st = alone[static_cast<std::size_t>(r)];
        const BucketSlot& k = st.buckets[static_cast<std::size_t>(b)];
        const int64_t prev = b == 0 ? 0 : ends[b - 1] + end_skew(r, s, b - 1);
        last = std::max({last, k.ready, k.launch_exit + kGpuLatencyNs, prev});
      }
      const double bytes = static_cast<double>(bucket_count(b) * 2);
      ends[b] = last + static_cast<int64_t>(jittered(bytes / job.bus_bytes_per_ns, kTransfer,
                                                     static_cast<uint64_t>(s),
                                                     static_cast<uint64_t>(b), 0));
    }
    for (int r = 0; r < job.ranks; ++r) {
      RankStep& st = alone[static_cast<std::size_t>(r)];
      finish(ends, st);
      start[static_cast<std::size_t>(r)] = st.host_end;
    }
  }
}

int64_t TrainingTimeline::first_step_start(int rank) const {
  return first_start_.at(static_cast<std::size_t>(rank));
}

BucketSlot TrainingTimeline::broadcast(int rank) const {
  BucketSlot b;
  const auto r = static_cast<uint64_t>(rank);
  // Comm init returns at about the same time everywhere (it is collective); the ranks then
  // reach DDP's broadcast apart by their own start-up work.
  b.call_enter = 1'020'000'000 + static_cast<int64_t>(draw(kStart, r, 0, 0) * 2'000'000);
  b.launch_enter = b.call_enter + 6'000;
  b.launch_exit = b.launch_enter + kLaunchNs;
  b.call_exit = b.launch_exit + kCallNs;
  b.ready = b.call_enter;
  b.start = b.launch_exit + kGpuLatencyNs;
  b.end = broadcast_end_ + end_skew(rank, -1, 0);
  return b;
}

void TrainingTimeline::plan_alone(int rank, int step, int64_t start, RankStep& out,
                                  bool keep_kernels) const {
  const auto r = static_cast<uint64_t>(rank), s = static_cast<uint64_t>(step);
  out.rank = rank;
  out.step = step;
  out.host_start = start;
  out.compute.clear();
  out.buckets.assign(static_cast<std::size_t>(job_.buckets), BucketSlot{});
  const double slow = rank == job_.straggler_rank ? 1.0 + job_.straggler_slowdown : 1.0;
  int64_t h = start;
  if (rank == job_.stall_rank && step % job_.stall_every == job_.stall_every - 1)
    h += job_.stall_ns;
  h += static_cast<int64_t>(jittered(kDataLoadNs, kHost, r, s, 0));
  int64_t gpu = start;  // the previous step's optimizer ended before the host synced
  const int compute = forward_kernels_ + backward_kernels_;
  const int total = compute + job_.optimizer_kernels;
  int bucket = 0;
  for (int i = 0; i < total; ++i) {
    KernelSlot k;
    k.launch_enter = h;
    k.launch_exit = h + static_cast<int64_t>(
                            jittered(kLaunchNs, kHost, r, s, 2 * static_cast<uint64_t>(i) + 1));
    h = k.launch_exit +
        static_cast<int64_t>(jittered(kOpGapNs, kHost, r, s, 2 * static_cast<uint64_t>(i) + 2));
    const double ns = static_cast<double>(kernel_ns_[static_cast<std::size_t>(i)]) * slow;
    const int64_t d = static_cast<int64_t>(jittered(ns, kKernel, r, s, static_cast<uint64_t>(i)));
    const auto family = kernel_names().size() - 1;  // the last name is the optimizer's
    k.name = i >= compute ? static_cast<uint32_t>(family)
                          : static_cast<uint32_t>((i % 4) + (i >= forward_kernels_ ? 4 : 0));
    if (i < compute) {
      k.start = std::max(gpu + (i > 0 ? job_.kernel_gap_ns : 0), k.launch_exit + kGpuLatencyNs);
      k.end = k.start + d;
      gpu = k.end;
      if (keep_kernels) out.compute.push_back(k);
    } else {
      // The optimizer waits for the last all-reduce: finish() places it.
      k.start = d;  // its duration until then
      out.compute.push_back(k);
    }
    if (i == compute - 1) out.compute_end = gpu;
    if (bucket < job_.buckets && i >= forward_kernels_ &&
        i - forward_kernels_ == bucket_after_[static_cast<std::size_t>(bucket)]) {
      // DDP's hook: this bucket's gradients are done on the compute stream; its all-reduce goes
      // on the NCCL stream, which waits for them.
      BucketSlot& b = out.buckets[static_cast<std::size_t>(bucket)];
      b.call_enter = h;
      b.launch_enter = h + 6'000;
      b.launch_exit = b.launch_enter + kLaunchNs;
      b.call_exit = b.launch_exit + static_cast<int64_t>(jittered(kCallNs, kCall, r, s,
                                                                  static_cast<uint64_t>(bucket)));
      b.ready = gpu;
      h = b.call_exit + 2'000;
      ++bucket;
    }
  }
  out.host_end = h;  // until finish(): when the host is done launching
}

void TrainingTimeline::finish(const int64_t* instance_ends, RankStep& out) const {
  int64_t prev = 0;
  for (int b = 0; b < job_.buckets; ++b) {
    BucketSlot& k = out.buckets[static_cast<std::size_t>(b)];
    k.start = std::max({k.ready, k.launch_exit + kGpuLatencyNs, prev});
    k.end = instance_ends[b] + end_skew(out.rank, out.step, b);
    prev = k.end;
  }
  // The optimizer: after the compute stream's backward and the last all-reduce.
  int64_t gpu = std::max(out.compute_end, prev);
  const std::size_t first_opt =
      out.compute.size() - static_cast<std::size_t>(job_.optimizer_kernels);
  for (std::size_t i = first_opt; i < out.compute.size(); ++i) {
    KernelSlot& k = out.compute[i];
    const int64_t d = k.start;
    k.start = std::max(gpu, k.launch_exit + kGpuLatencyNs);
    k.end = k.start + d;
    gpu = k.end;
  }
  const auto r = static_cast<uint64_t>(out.rank), s = static_cast<uint64_t>(out.step);
  // The host syncs (loss.item()): the next step starts when the GPU is done.
  out.host_end =
      std::max(out.host_end, gpu) + static_cast<int64_t>(jittered(kSyncNs, kHost, r, s, 1u << 30));
}

void TrainingTimeline::plan(int rank, int step, int64_t start, RankStep& out) const {
  if (rank < 0 || rank >= job_.ranks || step < 0 || step >= job_.steps)
    throw std::out_of_range("training job: no such rank or step");
  plan_alone(rank, step, start, out, true);
  finish(&instance_end_[static_cast<std::size_t>(step) * job_.buckets], out);
}

}  // namespace ncclwatch::bench

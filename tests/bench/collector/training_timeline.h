// The timeline of a simulated data-parallel (DDP) training job at scale, for generating realistic
// full-mode traces (training_job_writer.h): per step a forward and a backward of compute kernels
// launched by the host, the gradient buckets' all-reduces issued during the backward on an NCCL
// stream (overlapping the rest of it), the optimizer after the last all-reduce, and the host's
// sync at the end of the step -- as fake_train runs it under the real shim, with per-rank
// variation: kernel jitter, one straggler rank whose GPU is slower, one rank that stalls on the
// host every N-th step.
//
// An all-reduce ends when its last rank has started it, so the ranks' timelines are coupled. The
// constructor runs every rank step by step once and keeps only each instance's end (steps x
// buckets values); plan() then replays one rank's step alone from the same seeded draws, so a
// writer can stream one rank's file after another in a few MB of memory whatever the job's size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclwatch::bench {

struct TrainingJob {
  std::string dir;
  std::string job = "train";
  int ranks = 64;
  int ranks_per_host = 8;
  int steps = 100;
  int buckets = 8;             // gradient all-reduces per step
  int kernels_per_step = 400;  // compute kernels: a third forward, the rest backward
  int optimizer_kernels = 4;   // of those, after the last all-reduce
  uint64_t seed = 1;
  int64_t forward_ns = 15'000'000;  // GPU time of the forward (the backward takes twice)
  int64_t optimizer_ns = 3'000'000;
  int64_t bucket_bytes = 25 << 20;  // bf16 gradients per bucket
  double bus_bytes_per_ns = 12.0;   // all-reduce transfer rate (12 GB/s)
  double jitter = 0.03;             // +- this fraction on every kernel and transfer
  int straggler_rank = 1;           // -1: none; its compute takes straggler_slowdown longer
  double straggler_slowdown = 0.15;
  int stall_rank = 2;  // -1: none; stalls stall_ns on the host before every stall_every-th step
  int stall_every = 10;
  int64_t stall_ns = 30'000'000;
  // GPU idle between consecutive compute kernels of a step (0: back to back). Real GPU-bound
  // training has a few µs between kernels (PyTorch-profiler traces: as many idle gaps as kernels),
  // which makes every kernel its own span of GPU time: what a rank's digest keeps grows with it.
  int64_t kernel_gap_ns = 0;
};

// One kernel on one rank: the host's launch and the GPU interval (true time: no host offsets).
struct KernelSlot {
  int64_t launch_enter = 0, launch_exit = 0, start = 0, end = 0;
  uint32_t name = 0;         // index into TrainingTimeline::kernel_names()
  uint32_t correlation = 0;  // set by the writer, in launch order
};

// One all-reduce bucket on one rank.
struct BucketSlot {
  int64_t call_enter = 0, call_exit = 0;  // the host's ncclAllReduce
  int64_t launch_enter = 0, launch_exit = 0;
  int64_t ready = 0;           // its gradients done on the compute stream (the stream waits)
  int64_t start = 0, end = 0;  // the NCCL kernel: starts alone, ends when the last rank came
  uint32_t correlation = 0;    // set by the writer, in launch order
};

// One rank's step: [host_start, host_end) is the ProfilerStep#N range (the next step starts at
// host_end).
struct RankStep {
  int rank = 0, step = 0;
  int64_t host_start = 0, host_end = 0;
  int64_t compute_end = 0;          // GPU end of the last backward kernel
  std::vector<KernelSlot> compute;  // forward, backward, optimizer: launch order
  std::vector<BucketSlot> buckets;
};

class TrainingTimeline {
 public:
  // Runs the whole job once (O(ranks x steps x kernels) draws, O(ranks + steps x buckets)
  // memory). Throws std::invalid_argument on parameters it cannot simulate.
  explicit TrainingTimeline(const TrainingJob& job);

  const TrainingJob& job() const { return job_; }
  // The rank's first step starts here (after comm init and the parameters' broadcast).
  int64_t first_step_start(int rank) const;
  // The set-up broadcast (DDP's constructor) on `rank`: call enter, call exit, kernel start,
  // kernel end.
  BucketSlot broadcast(int rank) const;
  // Fills `out` with `rank`'s step `step` starting at `start` (first_step_start, or the previous
  // step's host_end).
  void plan(int rank, int step, int64_t start, RankStep& out) const;
  // Names of the compute kernels (KernelSlot::name indexes them) and of the NCCL kernels.
  static const std::vector<std::string>& kernel_names();
  static const char* allreduce_kernel_name();
  static const char* broadcast_kernel_name();
  // Elements of bucket b (bf16), as the call passes them.
  uint64_t bucket_count(int b) const;

 private:
  // The part of a step that depends on this rank only (kernels, host launches, bucket ready
  // times); the NCCL kernels and the optimizer need the instances' ends. Without keep_kernels
  // only the optimizer's kernels are kept (finish() places them).
  void plan_alone(int rank, int step, int64_t start, RankStep& out, bool keep_kernels) const;
  void finish(const int64_t* instance_ends, RankStep& out) const;
  // Uniform in [0, 1) from the seed and the coordinates.
  double draw(uint64_t a, uint64_t b, uint64_t c, uint64_t d) const;
  double jittered(double v, uint64_t a, uint64_t b, uint64_t c, uint64_t d) const;
  int64_t end_skew(int rank, int step, int bucket) const;

  TrainingJob job_;
  int forward_kernels_ = 0, backward_kernels_ = 0;
  std::vector<int64_t> kernel_ns_;     // nominal duration per kernel index
  std::vector<int> bucket_after_;      // backward kernel index after which bucket b is ready
  std::vector<int64_t> instance_end_;  // [step * buckets + b]: the latest rank's end
  int64_t broadcast_end_ = 0;
  std::vector<int64_t> first_start_;  // per rank
};

}  // namespace ncclwatch::bench

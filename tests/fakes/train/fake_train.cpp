// fake_train: a fake data-parallel (DDP) training rank on the fake GPU, for known-answer
// scenarios. Run N ranks under fake_launcher (RANK, WORLD_SIZE, LOCAL_RANK, FAKE_RDZV_DIR);
// link/preload the fake libcudart.so.13 and libnccl.so.2 (and libncclwatch.so to record).
//
// At start, like DDP's constructor: one ncclBroadcast of the parameters from rank 0 (this is also
// where the shim starts GPU timing: at the first collective).
// Per step, like DDP:
//   host stall (optional) -> [NVTX "step" range, optional]
//   forward:   --layers kernels "fwd_kernel" on the compute stream, --fwd-us in total
//   backward:  --layers kernels "bwd_kernel", --bwd-us in total; the gradients of bucket b are
//              ready after its share of the backward kernels. With overlap (default) bucket b's
//              all-reduce is issued then, on the NCCL stream, which waits (cudaStreamWaitEvent)
//              for those kernels: communication overlaps the rest of backward. --no-overlap
//              issues every bucket after the whole backward.
//   optimizer: the compute stream waits for the last all-reduce, then "optimizer_kernel"
//              (--opt-us); the host syncs the compute stream (loss.item()).
// Options (all optional):
//   --steps N           steps (default 5)
//   --buckets B         all-reduce buckets per step (default 4)
//   --bucket-mb M       MiB per bucket (default 25; float32 count = M MiB / 4)
//   --layers L          kernels per forward and per backward (default 8; >= buckets)
//   --fwd-us U          forward time per step, us (default 3000)
//   --bwd-us U          backward time per step, us (default 6000)
//   --opt-us U          optimizer time per step, us (default 1000)
//   --no-overlap        all-reduce after the whole backward
//   --slow R:F          rank R's compute takes F times longer (a slow GPU); repeatable
//   --slow-from R:K:F   from step K on, rank R's compute takes F times longer (a GPU turning
//                       slow mid-run); repeatable
//   --stall R:MS        rank R sleeps MS ms on the host before every step (host stall); repeatable
//   --stall-step R:K:MS rank R sleeps MS ms before step K only; repeatable
//   --stall-every R:N:MS rank R sleeps MS ms before every N-th step (step % N == N - 1);
//                       repeatable
//   --host-work R:MS    rank R computes on its CPU for MS ms of its own CPU time before every
//                       step (input preprocessing in the training process): on a CPU shared
//                       with other processes it takes longer (undeclared to the fake GPU's
//                       virtual host: use it with --mode host); repeatable
//   --pin R:CPU         rank R runs on CPU number CPU only (sched_setaffinity at start)
//   --spike R:N:MS      on rank R, every N-th step (step % N == N - 1) backward gets one extra
//                       "spike_kernel" of MS ms; repeatable
//   --nvtx              wrap each step in nvtxRangePushA("step") / nvtxRangePop
//   --nonblocking       init the comm with config.blocking = 0 (poll ncclCommGetAsyncError)
//   --launch-us U       U us of host work before every compute kernel launch (Python and
//                       framework overhead per op): with kernels shorter than U the GPU waits
//                       on the host between kernels (launch-bound)
//   --tp G              tensor parallelism: the world comm is split into groups of G
//                       consecutive ranks (ncclCommSplit, color rank / G); after every forward
//                       and backward kernel, one all-reduce of --tp-kb KiB on that comm, on the
//                       compute stream (like Megatron's row-parallel layers: the next layer
//                       waits for it)
//   --tp-kb K           KiB per tensor-parallel all-reduce (default 512)
//   --virtual-host      the fake GPU dates launches from the host's virtual position, as
//                       NCCLWATCH_FAKE_VIRTUAL_HOST=1 does (tests/fakes/cuda/virtual_gpu.h)
// Rank 0 writes the ncclUniqueId to $FAKE_RDZV_DIR/train.uid; the others wait for it.
// Prints one line per rank at the end: "fake_train rank R steps N mean_step_us X".
// Exit status: 0, 2 on bad options, 4 on an NCCL/CUDA error, 5 when rank 0's unique id never
// came.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "common/rank_support.h"

#include <sched.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda_hooks.h"

extern "C" int nvtxRangePushA(const char* message);
extern "C" int nvtxRangePop(void);

namespace {

struct RankValue {
  int rank;
  double a;
  double b = 0;
  double c = 0;
};

struct Options {
  int steps = 5, buckets = 4, layers = 8;
  double bucket_mb = 25, fwd_us = 3000, bwd_us = 6000, opt_us = 1000, launch_us = 0;
  int tp = 0;
  double tp_kb = 512;
  bool overlap = true, nvtx = false, nonblocking = false, virtual_host = false;
  std::vector<RankValue> slow, slow_from, stall, stall_step, stall_every, spike, host_work, pin;
};

using ncclwatch::fakes::env_int;
using ncclwatch::fakes::g_rank;
using ncclwatch::fakes::wait_ready;

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "fake_train %d: %s failed: %d\n", g_rank, #call, (int)e_); \
      std::exit(4);                                                                   \
    }                                                                                 \
  } while (0)

bool parse_values(const char* s, int n, RankValue& out) {
  double v[3] = {0, 0, 0};
  char* end = nullptr;
  const char* p = s;
  for (int i = 0; i < n; ++i) {
    v[i] = std::strtod(p, &end);
    if (end == p) return false;
    if (i + 1 < n) {
      if (*end != ':') return false;
      p = end + 1;
    }
  }
  if (*end != '\0') return false;
  out = {static_cast<int>(v[0]), v[1], v[2], 0};
  return true;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    RankValue rv{};
    if (a == "--no-overlap") {
      o.overlap = false;
    } else if (a == "--nvtx") {
      o.nvtx = true;
    } else if (a == "--nonblocking") {
      o.nonblocking = true;
    } else if (a == "--virtual-host") {
      o.virtual_host = true;
    } else if ((v = value()) == nullptr) {
      return false;
    } else if (a == "--steps") {
      o.steps = std::atoi(v);
    } else if (a == "--buckets") {
      o.buckets = std::atoi(v);
    } else if (a == "--layers") {
      o.layers = std::atoi(v);
    } else if (a == "--bucket-mb") {
      o.bucket_mb = std::atof(v);
    } else if (a == "--fwd-us") {
      o.fwd_us = std::atof(v);
    } else if (a == "--bwd-us") {
      o.bwd_us = std::atof(v);
    } else if (a == "--opt-us") {
      o.opt_us = std::atof(v);
    } else if (a == "--launch-us") {
      o.launch_us = std::atof(v);
    } else if (a == "--tp") {
      o.tp = std::atoi(v);
    } else if (a == "--tp-kb") {
      o.tp_kb = std::atof(v);
    } else if (a == "--slow" && parse_values(v, 2, rv)) {
      o.slow.push_back(rv);
    } else if (a == "--slow-from" && parse_values(v, 3, rv) && rv.b > 0) {
      o.slow_from.push_back(rv);
    } else if (a == "--stall" && parse_values(v, 2, rv)) {
      o.stall.push_back(rv);
    } else if (a == "--stall-step" && parse_values(v, 3, rv)) {
      o.stall_step.push_back(rv);
    } else if (a == "--stall-every" && parse_values(v, 3, rv) && rv.a >= 1) {
      o.stall_every.push_back(rv);
    } else if (a == "--host-work" && parse_values(v, 2, rv)) {
      o.host_work.push_back(rv);
    } else if (a == "--pin" && parse_values(v, 2, rv) && rv.a >= 0) {
      o.pin.push_back(rv);
    } else if (a == "--spike" && parse_values(v, 3, rv)) {
      o.spike.push_back(rv);
    } else {
      return false;
    }
  }
  return o.steps >= 0 && o.buckets >= 1 && o.layers >= o.buckets && o.bucket_mb > 0 &&
         o.launch_us >= 0 && o.tp >= 0 && o.tp_kb > 0;
}

double g_launch_us = 0;

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// MS ms of this thread's CPU time, however long the scheduler makes that take.
void burn_cpu(double ms) {
  const int64_t until = thread_cpu_ns() + static_cast<int64_t>(ms * 1e6);
  volatile uint64_t x = 0;
  while (thread_cpu_ns() < until) x = x + 1;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "fake_train %d: cannot pin to CPU %d: %s\n", g_rank, cpu,
                 std::strerror(errno));
    std::exit(2);
  }
}

void kernel(cudaStream_t s, const char* name, double us) {
  static char dummy;  // a "function" address: the fake only checks it is not null
  if (g_launch_us > 0) ncclwatch_fake_cuda_host_sleep(static_cast<int64_t>(g_launch_us * 1000.0));
  ncclwatch_fake_cuda_next_kernel(name, static_cast<int64_t>(us * 1000.0));
  CUDA_CHECK(cudaLaunchKernel(&dummy, dim3(1), dim3(1), nullptr, 0, s));
}

}  // namespace

int main(int argc, char** argv) {
  ncclwatch::fakes::g_program = "fake_train";
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "fake_train: bad options (see the comment at the top of fake_train.cpp)\n");
    return 2;
  }
  if (o.virtual_host) ncclwatch_fake_cuda_virtual_host();
  g_rank = env_int("RANK", 0);
  g_launch_us = o.launch_us;
  for (const auto& p : o.pin) {
    if (p.rank == g_rank) pin_to(static_cast<int>(p.a));
  }
  const int world = env_int("WORLD_SIZE", 1);
  int devices = 1;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  CUDA_CHECK(cudaSetDevice(env_int("LOCAL_RANK", g_rank) % devices));
  double slow_always = 1.0;
  for (const auto& s : o.slow) {
    if (s.rank == g_rank) slow_always *= s.a;
  }

  ncclComm_t comm = ncclwatch::fakes::init_comm(
      world, ncclwatch::fakes::exchange_unique_id("train"), o.nonblocking);
  // Tensor-parallel group: every rank takes part in the split (NCCL's rule).
  ncclComm_t tp_comm = nullptr;
  if (o.tp > 0) {
    FAKE_NCCL_CHECK(ncclCommSplit(comm, g_rank / o.tp, g_rank, &tp_comm, nullptr));
    if (o.nonblocking) wait_ready(tp_comm);
  }
  const size_t tp_count = static_cast<size_t>(o.tp_kb * 1024 / 4);
  cudaStream_t compute, comm_stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
  std::vector<cudaEvent_t> ready(static_cast<size_t>(o.buckets));
  for (auto& e : ready) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  cudaEvent_t reduced;
  CUDA_CHECK(cudaEventCreateWithFlags(&reduced, cudaEventDisableTiming));
  const size_t count = static_cast<size_t>(o.bucket_mb * 1024 * 1024 / 4);
  float* grads = nullptr;  // the fake NCCL never touches buffers: one float stands for a bucket
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&grads), sizeof(float)));

  // DDP's _sync_module_states: parameters broadcast from rank 0 before the first step.
  FAKE_NCCL_CHECK(ncclBroadcast(grads, grads, count, ncclFloat32, 0, comm, comm_stream));
  if (o.nonblocking) wait_ready(comm);
  CUDA_CHECK(cudaStreamSynchronize(comm_stream));

  auto t0 = std::chrono::steady_clock::now();
  for (int step = 0; step < o.steps; ++step) {
    double slow = slow_always;
    for (const auto& s : o.slow_from) {
      if (s.rank == g_rank && step >= static_cast<int>(s.a)) slow *= s.b;
    }
    for (const auto& s : o.stall) {
      if (s.rank == g_rank) ncclwatch_fake_cuda_host_sleep(static_cast<int64_t>(s.a * 1e6));
    }
    for (const auto& s : o.stall_step) {
      if (s.rank == g_rank && static_cast<int>(s.a) == step) {
        ncclwatch_fake_cuda_host_sleep(static_cast<int64_t>(s.b * 1e6));
      }
    }
    for (const auto& s : o.stall_every) {
      const int every = static_cast<int>(s.a);
      if (s.rank == g_rank && step % every == every - 1)
        ncclwatch_fake_cuda_host_sleep(static_cast<int64_t>(s.b * 1e6));
    }
    for (const auto& w : o.host_work) {
      if (w.rank == g_rank) burn_cpu(w.a);
    }
    if (o.nvtx) nvtxRangePushA("step");
    auto tp_all_reduce = [&] {
      if (tp_comm == nullptr) return;
      FAKE_NCCL_CHECK(
          ncclAllReduce(grads, grads, tp_count, ncclFloat32, ncclSum, tp_comm, compute));
      if (o.nonblocking) wait_ready(tp_comm);
    };
    for (int l = 0; l < o.layers; ++l) {
      kernel(compute, "fwd_kernel", o.fwd_us * slow / o.layers);
      tp_all_reduce();
    }
    // Backward: bucket b's gradients are ready after layers_per_bucket * (b + 1) kernels.
    const int per_bucket = o.layers / o.buckets;
    int bucket = 0;
    for (int l = 0; l < o.layers; ++l) {
      kernel(compute, "bwd_kernel", o.bwd_us * slow / o.layers);
      tp_all_reduce();
      if (l == 0) {
        for (const auto& s : o.spike) {
          int every = static_cast<int>(s.a);
          if (s.rank == g_rank && every > 0 && step % every == every - 1)
            kernel(compute, "spike_kernel", s.b * 1000);
        }
      }
      bool bucket_done =
          bucket < o.buckets && (l + 1 == per_bucket * (bucket + 1) || l + 1 == o.layers);
      if (!bucket_done) continue;
      CUDA_CHECK(cudaEventRecord(ready[bucket], compute));
      if (o.overlap) {
        CUDA_CHECK(cudaStreamWaitEvent(comm_stream, ready[bucket], 0));
        FAKE_NCCL_CHECK(
            ncclAllReduce(grads, grads, count, ncclFloat32, ncclSum, comm, comm_stream));
      }
      ++bucket;
    }
    if (!o.overlap) {
      CUDA_CHECK(cudaStreamWaitEvent(comm_stream, ready[o.buckets - 1], 0));
      for (int b = 0; b < o.buckets; ++b) {
        FAKE_NCCL_CHECK(
            ncclAllReduce(grads, grads, count, ncclFloat32, ncclSum, comm, comm_stream));
      }
    }
    if (o.nonblocking) wait_ready(comm);
    CUDA_CHECK(cudaEventRecord(reduced, comm_stream));
    CUDA_CHECK(cudaStreamWaitEvent(compute, reduced, 0));
    kernel(compute, "optimizer_kernel", o.opt_us * slow);
    CUDA_CHECK(cudaStreamSynchronize(compute));  // loss.item()
    if (o.nvtx) nvtxRangePop();
  }
  auto elapsed =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  CUDA_CHECK(cudaStreamSynchronize(comm_stream));
  if (tp_comm != nullptr) FAKE_NCCL_CHECK(ncclCommDestroy(tp_comm));
  FAKE_NCCL_CHECK(ncclCommDestroy(comm));
  CUDA_CHECK(cudaFree(grads));
  std::printf("fake_train rank %d steps %d mean_step_us %.0f\n", g_rank, o.steps,
              o.steps > 0 ? elapsed / o.steps : 0.0);
  return 0;
}

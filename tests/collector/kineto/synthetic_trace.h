// Writes Kineto-style Chrome traces shaped like PyTorch 2.x's (cpu_op / cuda_runtime / kernel /
// ac2g flow events with their usual args, record_param_comms with process-group args, NCCL
// kernels on their own stream, ProfilerStep ranges), with a timeline whose overlap is known:
// for the benchmark (hundreds of MB) and for multi-rank loader tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace ncclwatch::kineto::testing {

struct SyntheticTraceSpec {
  int rank = 0;
  int world_size = 2;
  int steps = 3;
  int compute_kernels_per_step = 20;  // back to back on stream 7, 10 µs each, 2 µs apart
  int allreduces_per_step = 2;        // NCCL kernels on stream 20, 40 µs each
  int64_t rank_delay_us = 0;          // shifts this rank's NCCL kernels later (a straggler)
  bool fractional_ts = true;          // "1234.567" timestamps like PyTorch >= 2.3
  std::string pg_name = "0";          // "" writes old-style record_param_comms (no args)
  // ProfilerStep#N also as a GPU-side "gpu_user_annotation" (on the compute stream, from the
  // step's first kernel to its last NCCL kernel), as Kineto writes on ROCm (MI300) and newer
  // CUDA builds; `cpu_steps` = false leaves the CPU ranges out.
  bool gpu_step_annotations = false;
  bool cpu_steps = true;
  // The GPU runs behind the host: every GPU event (kernels, the GPU-side step annotations) lies
  // this much later than its launch would put it, so with a lag over a step the GPU-side
  // ProfilerStep#N falls after the CPU range of the same name, the last after the last CPU step.
  int64_t gpu_lag_us = 0;
  int skip_cpu_step = 0;  // 1-based step whose CPU range is left out (0: none)
  // The all-reduces of this many steps before the first one (launched before the profiler's
  // active window, still running in it when the GPU lags): NCCL kernels with no launch in the
  // trace, which HTA leaves out (synthetic_overlap_pct does too).
  int unlaunched_steps = 0;
};

// Each step: compute kernels k*12 .. k*12+10 µs (from the step's start); NCCL kernel j of the
// step starts at 100 + 60*j (+ rank_delay_us) µs and lasts 40 µs; the step lasts
// max(12*kernels, 100 + 60*allreduces) + 20 µs. Returns the bytes written, stops after
// `min_bytes` (whole steps) when min_bytes > 0, else after spec.steps steps.
uint64_t write_synthetic_trace(std::FILE* out, const SyntheticTraceSpec& spec,
                               uint64_t min_bytes = 0);
std::string synthetic_trace(const SyntheticTraceSpec& spec);

// The overlap % of a trace written with `spec` (all steps), computed from the layout above.
double synthetic_overlap_pct(const SyntheticTraceSpec& spec);

}  // namespace ncclwatch::kineto::testing

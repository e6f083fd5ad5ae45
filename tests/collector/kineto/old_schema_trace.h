// Writes PyTorch-profiler traces in the 2021 Kineto schema (PyTorch 1.8-1.9): capitalised
// categories (Operator, Runtime, Kernel, Memcpy, Trace), ProfilerStep#N as an Operator,
// "external id" in lower case on runtime and GPU events, GPU tracks named "stream 7", no
// distributedInfo, no record_param_comms (the collective is the "nccl:all_reduce" op), and NCCL
// 2.7's kernel names. Written from the schema as PyTorch 1.8's libkineto emits it and
// TensorBoard's profiler plugin reads it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclwatch::kineto::testing {

struct OldSchemaSpec {
  int steps = 4;
  int compute_kernels = 10;   // per step on stream 7: kernel k at [k*100+20, k*100+100) µs
  int64_t nccl_delay_us = 0;  // this rank's NCCL kernel starts at 520 + delay (ends at 1320)
  bool string_tids = true;    // "tid": "stream 7" (1.8) rather than 7 (1.9)
};

// One GPU activity written, µs from the trace's first step.
struct OldSchemaSpan {
  enum Kind { kCompute, kNccl, kMemcpy };
  Kind kind;
  int64_t start_us;
  int64_t end_us;
};

// Step s starts at 2000*s µs and lasts 1900 µs: compute kernels, an nccl:all_reduce op at
// [500, 515) (between two compute kernels) launching its kernel at 505, the kernel
// [520 + delay, 1320), a memcpy [1500, 1600).
std::string old_schema_trace(const OldSchemaSpec& spec,
                             std::vector<OldSchemaSpan>* spans = nullptr);

}  // namespace ncclwatch::kineto::testing

#include "old_schema_trace.h"

#include <fmt/format.h>

namespace ncclwatch::kineto::testing {

std::string old_schema_trace(const OldSchemaSpec& spec, std::vector<OldSchemaSpan>* spans) {
  constexpr int64_t t0 = 1618338300000000;  // µs, as PyTorch 1.8 wrote them (whole µs)
  constexpr int pid = 4242;
  const std::string gpu_tid = spec.string_tids ? "\"stream 7\"" : "7";
  const std::string nccl_tid = spec.string_tids ? "\"stream 13\"" : "13";
  std::vector<std::string> ev;
  int64_t ext = 100, corr = 1000;
  auto span = [spans](OldSchemaSpan::Kind k, int64_t a, int64_t b) {
    if (spans != nullptr) spans->push_back({k, a, b});
  };
  const int64_t end_us = 2000 * spec.steps;
  ev.push_back(fmt::format(
      R"J({{"ph": "X", "cat": "Trace", "ts": {}, "dur": {}, "pid": "Traces", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {{"Op count": 0}}}})J",
      t0 - 10, end_us + 20));
  for (int s = 0; s < spec.steps; ++s) {
    const int64_t st = 2000 * s;
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "Operator", "name": "ProfilerStep#{}", "pid": {}, "tid": {}, "ts": {}, "dur": 1900, "args": {{"Input dims": [], "External id": {}}}}})J",
        s + 2, pid, pid, t0 + st, ++ext));
    for (int k = 0; k < spec.compute_kernels; ++k) {
      const int64_t e = ++ext, c = ++corr, at = st + 100 * k;
      ev.push_back(fmt::format(
          R"J({{"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": {}, "tid": {}, "ts": {}, "dur": 50, "args": {{"Input dims": [[64, 64], [64, 64]], "External id": {}}}}})J",
          pid, pid, t0 + at, e));
      ev.push_back(fmt::format(
          R"J({{"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": {}, "tid": {}, "ts": {}, "dur": 5, "args": {{"cbid": 211, "correlation": {}, "external id": {}, "external ts": {}}}}})J",
          pid, pid, t0 + at + 10, c, e, t0 + at));
      ev.push_back(fmt::format(
          R"J({{"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": {}, "ts": {}, "dur": 80, "args": {{"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {}, "external id": {}, "registers per thread": 126, "shared memory": 12288, "blocks per SM": 0.05, "warps per SM": 0.4, "grid": [4, 1, 1], "block": [256, 1, 1], "theoretical occupancy %": 12}}}})J",
          gpu_tid, t0 + at + 20, c, e));
      span(OldSchemaSpan::kCompute, at + 20, at + 100);
    }
    const int64_t e = ++ext, c = ++corr;
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "Operator", "name": "nccl:all_reduce", "pid": {}, "tid": {}, "ts": {}, "dur": 15, "args": {{"Input dims": [[1048576]], "External id": {}}}}})J",
        pid, pid, t0 + st + 500, e));
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": {}, "tid": {}, "ts": {}, "dur": 5, "args": {{"cbid": 211, "correlation": {}, "external id": {}, "external ts": {}}}}})J",
        pid, pid, t0 + st + 505, c, e, t0 + st + 500));
    const int64_t nccl_start = st + 520 + spec.nccl_delay_us, nccl_end = st + 1320;
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "Kernel", "name": "ncclAllReduceRingLLKernel_sum_f32(ncclColl)", "pid": 0, "tid": {}, "ts": {}, "dur": {}, "args": {{"queued": 0, "device": 0, "context": 1, "stream": 13, "correlation": {}, "external id": {}, "registers per thread": 72, "shared memory": 0, "blocks per SM": 0.1, "warps per SM": 0.8, "grid": [8, 1, 1], "block": [256, 1, 1], "theoretical occupancy %": 25}}}})J",
        nccl_tid, t0 + nccl_start, nccl_end - nccl_start, c, e));
    span(OldSchemaSpan::kNccl, nccl_start, nccl_end);
    const int64_t me = ++ext, mc = ++corr;
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "Operator", "name": "aten::copy_", "pid": {}, "tid": {}, "ts": {}, "dur": 120, "args": {{"External id": {}}}}})J",
        pid, pid, t0 + st + 1490, me));
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": {}, "tid": {}, "ts": {}, "dur": 8, "args": {{"cbid": 41, "correlation": {}, "external id": {}, "external ts": {}}}}})J",
        pid, pid, t0 + st + 1495, mc, me, t0 + st + 1490));
    ev.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": {}, "ts": {}, "dur": 100, "args": {{"device": 0, "context": 1, "stream": 7, "correlation": {}, "external id": {}, "bytes": 4194304, "memory bandwidth (GB/s)": 41.9}}}})J",
        gpu_tid, t0 + st + 1500, mc, me));
    span(OldSchemaSpan::kMemcpy, st + 1500, st + 1600);
  }
  std::string doc = "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n";
  for (std::size_t i = 0; i < ev.size(); ++i) doc += (i ? ",\n  " : "  ") + ev[i];
  doc += "\n  ]\n}\n";
  return doc;
}

}  // namespace ncclwatch::kineto::testing

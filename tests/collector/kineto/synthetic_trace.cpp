#include "synthetic_trace.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace ncclwatch::kineto::testing {
namespace {

constexpr int64_t kBaseUs = 1'700'000'000'000'000;  // epoch-sized µs, as Kineto writes them
constexpr int64_t kKernelUs = 10;
constexpr int64_t kKernelPitchUs = 12;
constexpr int64_t kNcclStartUs = 100;
constexpr int64_t kNcclPitchUs = 60;
constexpr int64_t kNcclUs = 40;

int64_t step_length_us(const SyntheticTraceSpec& s) {
  return std::max<int64_t>(kKernelPitchUs * s.compute_kernels_per_step,
                           kNcclStartUs + kNcclPitchUs * s.allreduces_per_step + s.rank_delay_us) +
         20;
}

class Writer {
 public:
  Writer(std::FILE* f, std::string* s) : file_(f), str_(s) {}
  template <typename... A>
  void emit(fmt::format_string<A...> f, A&&... a) {
    buf_.clear();
    fmt::format_to(std::back_inserter(buf_), f, std::forward<A>(a)...);
    if (!first_) put(",\n");
    first_ = false;
    put(std::string_view(buf_.data(), buf_.size()));
  }
  void put(std::string_view s) {
    bytes_ += s.size();
    if (file_ != nullptr) std::fwrite(s.data(), 1, s.size(), file_);
    if (str_ != nullptr) str_->append(s);
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::FILE* file_;
  std::string* str_;
  fmt::memory_buffer buf_;
  bool first_ = true;
  uint64_t bytes_ = 0;
};

uint64_t write(std::FILE* f, std::string* s, const SyntheticTraceSpec& spec, uint64_t min_bytes) {
  Writer w(f, s);
  w.put(
      fmt::format("{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": {0}, \"name\": "
                  "\"NVIDIA H100\", "
                  "\"totalGlobalMem\": 85000000000}}],\n  \"distributedInfo\": {{\"backend\": "
                  "\"nccl\", \"rank\": {0}, "
                  "\"world_size\": {1}, \"nccl_version\": \"2.21.5\"}},\n  \"traceEvents\": [\n",
                  spec.rank, spec.world_size));
  // Timestamps: fractional µs ("...123.456") or whole µs.
  auto ts = [&spec](int64_t us, int frac) {
    return spec.fractional_ts ? fmt::format("{}.{:03d}", us, frac) : fmt::format("{}", us);
  };
  const int pid = 1000 + spec.rank, tid = 2000 + spec.rank;
  int64_t ext = 1, corr = 1;
  std::string ranks = "[";
  for (int r = 0; r < spec.world_size; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  ranks += "]";
  w.put("");
  // Kernels launched before the trace began (no CPU op, no launch): the all-reduces of earlier
  // steps, still running when the trace starts (their compute ran before it).
  for (int step = -spec.unlaunched_steps; step < 0; ++step) {
    const int64_t t0 = kBaseUs + step * step_length_us(spec) + spec.gpu_lag_us;
    for (int j = 0; j < spec.allreduces_per_step; ++j, ++corr)
      w.emit(
          R"J({{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": {}, "tid": 20, "ts": {}, "dur": {}, "args": {{"queued": 0, "device": {}, "context": 1, "stream": 20, "correlation": {}}}}})J",
          spec.rank, ts(t0 + kNcclStartUs + kNcclPitchUs * j + spec.rank_delay_us, 0), kNcclUs,
          spec.rank, corr);
  }
  for (int step = 0;; ++step) {
    if (min_bytes == 0 && step >= spec.steps) break;
    if (min_bytes > 0 && w.bytes() >= min_bytes) break;
    const int64_t t0 = kBaseUs + step * step_length_us(spec);
    if (spec.gpu_step_annotations) {
      const int64_t gpu_end =
          t0 +
          std::max<int64_t>(int64_t{kKernelPitchUs} * spec.compute_kernels_per_step,
                            kNcclStartUs + int64_t{kNcclPitchUs} * spec.allreduces_per_step) +
          spec.rank_delay_us;
      w.emit(
          R"J({{"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#{}", "pid": {}, "tid": 7, "ts": {}, "dur": {}, "args": {{"External id": {}}}}})J",
          step + 1, spec.rank, ts(t0 + 2 + spec.gpu_lag_us, 0), gpu_end - t0 - 2, ext);
    }
    if (spec.cpu_steps && step + 1 != spec.skip_cpu_step)
      w.emit(
          R"J({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"External id": {}, "Record function id": 0, "Ev Idx": {}}}}})J",
          step + 1, pid, tid, ts(t0 - 5, 0), step_length_us(spec) - 10, ext, ext);
    ++ext;
    for (int k = 0; k < spec.compute_kernels_per_step; ++k) {
      const int64_t ks = t0 + kKernelPitchUs * k;
      const int64_t launch = ks - 3;
      w.emit(
          R"J({{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": {}, "tid": {}, "ts": {}, "dur": 2.5, "args": {{"External id": {}, "Record function id": {}, "Sequence number": {}, "Fwd thread id": 0, "Ev Idx": {}, "Input Dims": [[1024], [1024, 4096], [4096, 1024], [], []], "Input type": ["float", "float", "float", "Scalar", "Scalar"]}}}})J",
          pid, tid, ts(launch - 1, 250), ext, ext, ext, ext);
      w.emit(
          R"J({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {}, "tid": {}, "ts": {}, "dur": 1.5, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}})J",
          pid, tid, ts(launch, 0), ext, corr);
      w.emit(
          R"J({{"ph": "s", "id": {}, "pid": {}, "tid": {}, "ts": {}, "cat": "ac2g", "name": "ac2g"}})J",
          corr, pid, tid, ts(launch, 0));
      w.emit(
          R"J({{"ph": "X", "cat": "kernel", "name": "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4>(cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4::Params)", "pid": {}, "tid": 7, "ts": {}, "dur": {}, "args": {{"External id": {}, "queued": 0, "device": {}, "context": 1, "stream": 7, "correlation": {}, "registers per thread": 168, "shared memory": 73728, "blocks per SM": 1.2, "warps per SM": 9.6, "grid": [64, 8, 1], "block": [256, 1, 1], "est. achieved occupancy %": 12}}}})J",
          spec.rank, ts(ks + spec.gpu_lag_us, 0), kKernelUs, ext, spec.rank, corr);
      w.emit(
          R"J({{"ph": "f", "id": {}, "pid": {}, "tid": 7, "ts": {}, "cat": "ac2g", "name": "ac2g", "bp": "e"}})J",
          corr, spec.rank, ts(ks + spec.gpu_lag_us, 0));
      ++ext;
      ++corr;
    }
    for (int j = 0; j < spec.allreduces_per_step; ++j) {
      const int64_t ns = t0 + kNcclStartUs + kNcclPitchUs * j + spec.rank_delay_us;
      const int64_t op = t0 + kNcclStartUs + kNcclPitchUs * j - 10;
      const int64_t nelems = 1'048'576 * (j + 1);
      if (!spec.pg_name.empty()) {
        w.emit(
            R"J({{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": {}, "tid": {}, "ts": {}, "dur": 8, "args": {{"External id": {}, "Record function id": {}, "Collective name": "allreduce", "dtype": "Float", "In msg nelems": {}, "Out msg nelems": {}, "Group size": {}, "In split size": "[]", "Out split size": "[]", "Global rank start": 0, "Global rank stride": 1, "Process Group Name": "{}", "Process Group Description": "default_pg", "Process Group Ranks": "{}", "Rank": {}, "Ev Idx": {}}}}})J",
            pid, tid, ts(op, 0), ext, ext, nelems, nelems, spec.world_size, spec.pg_name, ranks,
            spec.rank, ext);
      } else {
        w.emit(
            R"J({{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": {}, "tid": {}, "ts": {}, "dur": 8, "args": {{"External id": {}, "Ev Idx": {}}}}})J",
            pid, tid, ts(op, 0), ext, ext);
        w.emit(
            R"J({{"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": {}, "tid": {}, "ts": {}, "dur": 4, "args": {{"External id": {}}}}})J",
            pid, tid, ts(op + 1, 0), ext + 100000000);
      }
      w.emit(
          R"J({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": {}, "tid": {}, "ts": {}, "dur": 3, "args": {{"External id": {}, "cbid": 430, "correlation": {}}}}})J",
          pid, tid, ts(op + 2, 0), spec.pg_name.empty() ? corr : ext, corr);
      w.emit(
          R"J({{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": {}, "tid": 20, "ts": {}, "dur": {}, "args": {{"External id": {}, "queued": 0, "device": {}, "context": 1, "stream": 20, "correlation": {}, "registers per thread": 96, "shared memory": 0, "blocks per SM": 0.1, "warps per SM": 0.5, "grid": [16, 1, 1], "block": [512, 1, 1], "est. achieved occupancy %": 0}}}})J",
          spec.rank, ts(ns + spec.gpu_lag_us, 0), kNcclUs, spec.pg_name.empty() ? corr : ext,
          spec.rank, corr);
      ++ext;
      ++corr;
    }
  }
  w.put("\n  ],\n  \"traceName\": \"synthetic\",\n  \"displayTimeUnit\": \"ms\"\n}\n");
  return w.bytes();
}

}  // namespace

uint64_t write_synthetic_trace(std::FILE* out, const SyntheticTraceSpec& spec, uint64_t min_bytes) {
  return write(out, nullptr, spec, min_bytes);
}

std::string synthetic_trace(const SyntheticTraceSpec& spec) {
  std::string s;
  write(nullptr, &s, spec, 0);
  return s;
}

double synthetic_overlap_pct(const SyntheticTraceSpec& spec) {
  // Per step (all steps alike): compute = union of [12k, 12k+10); comm = [c_j, c_j+40).
  int64_t comm = 0, both = 0;
  for (int j = 0; j < spec.allreduces_per_step; ++j) {
    const int64_t cs = kNcclStartUs + kNcclPitchUs * j + spec.rank_delay_us, ce = cs + kNcclUs;
    comm += kNcclUs;
    for (int k = 0; k < spec.compute_kernels_per_step; ++k) {
      const int64_t ks = kKernelPitchUs * k, ke = ks + kKernelUs;
      both += std::max<int64_t>(0, std::min(ce, ke) - std::max(cs, ks));
    }
  }
  return comm > 0 ? 100.0 * static_cast<double>(both) / static_cast<double>(comm) : 0.0;
}

}  // namespace ncclwatch::kineto::testing

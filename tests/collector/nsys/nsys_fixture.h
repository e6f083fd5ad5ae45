// Writes Nsight Systems SQLite exports for tests and the benchmark, from the export schema NVIDIA
// documents (CUPTI_ACTIVITY_KIND_KERNEL / _RUNTIME / _MEMCPY / _MEMSET, NVTX_EVENTS, StringIds,
// PROCESSES, TARGET_INFO_*, META_DATA_*: the tables and columns `nsys export --type sqlite`
// writes, names through StringIds, processes and threads as serialized global ids), with a
// timeline whose answers are known: every activity written is also returned as a span.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ncclwatch::nsys::testing {

struct FixtureProcess {
  int64_t pid = 100;
  int device = 0;
  int64_t nccl_delay_us = 0;  // its NCCL kernels start this much later (they end with everyone's)
  int first_step = 0;         // capture begins at this step for it (earlier steps not written)
  int last_step = -1;         // and ends after this one (-1: the spec's last)
};

struct FixtureSpec {
  std::vector<FixtureProcess> processes = {{100, 0}, {101, 1}};
  int steps = 12;
  int64_t step_us = 10'000;
  int allreduces_per_step = 2;
  bool nvtx_steps = true;        // a "train_step" push/pop range per step and process
  bool nccl_nvtx = false;        // NCCL's own API ranges ("ncclAllReduce") around its launches
  bool generic_kernels = false;  // ncclDevKernel_Generic_4: only the NVTX range names the op
  bool target_info_gpu = false;  // the optional TARGET_INFO_GPU table
  bool minimal_schema = false;   // only the kernel table's required columns and StringIds
  std::string hostname = "node-a";
  std::map<std::string, std::string> env;  // PROCESS_0's recorded environment (RANK, ...)
  int64_t utc_epoch_ns = 1'779'630'014'975'716'426;
  int64_t system_clock_ns = 35'255'823'190;  // timestamps' clock at the session's start
  int64_t base_ns = 100'000'000'000;         // step 0 starts here (~65 s into the session)
};

struct FixtureSpan {
  std::size_t process;  // index in spec.processes
  bool comm;            // an NCCL kernel; else compute (memcpy/memset are not returned)
  int64_t start_ns, end_ns;
};

// Writes `path` (replacing it); returns the kernel rows written. Throws std::runtime_error when
// SQLite fails (a test bug).
uint64_t write_nsys_export(const std::string& path, const FixtureSpec& spec,
                           std::vector<FixtureSpan>* spans = nullptr);

// The step layout, µs from the step's start: compute kernels k = 0..3 at [2000k, 2000k+1500) on
// stream 7; all-reduce j launched at 1000 + 3000j (+ the process's delay), its kernel from 10 µs
// after the launch to 1000 + 3000j + max delay + 710; a memcpy [9000, 9200), a memset
// [9300, 9310).

}  // namespace ncclwatch::nsys::testing

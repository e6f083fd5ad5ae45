// Trace records built straight from format.h, one function per kind, for the tests' synthetic
// traces and step summaries (tests/collector/trace/trace_fixture.h, the history's simulated job,
// the shim's step observers) and the benchmarks' generated jobs (tests/bench/collector): which
// field each value goes to -- the prefix's per-kind bytes included -- is written here once. A
// record starts all zero, as the shim writes whole records: a field the caller leaves out of the
// *Fields stays zero (fill them with designated initializers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::test_support {

// An all-zero record of `kind` with prefix.tid = `tid`.
format::Record blank_record(format::RecordKind kind, uint32_t tid);

struct CallFields {
  uint32_t tid = 0;
  format::Func func = format::Func::kUnknown;
  int64_t enter_ns = 0, exit_ns = 0;
  uint64_t comm = 0;
  uint64_t count = 0;
  uint64_t stream = 0;
  uint32_t seq = 0;
  int32_t peer = 0;  // -1: none
  uint8_t datatype = 0;
};
format::Record call_record(const CallFields& f);

struct CommFields {
  uint32_t tid = 0;
  format::Func created_by = format::Func::kUnknown;
  int64_t enter_ns = 0, exit_ns = 0;
  uint64_t comm = 0;
  uint64_t parent = 0;
  uint64_t handle = 0;
  int32_t nranks = 0, rank = 0, device = 0;
};
format::Record comm_record(const CommFields& f);

// ncclCommDestroy's end of a comm.
format::Record comm_end_record(uint32_t tid, uint64_t comm, int64_t enter_ns, int64_t exit_ns);

struct IdentityFields {
  uint32_t tid = 0;
  format::RankSource source = format::RankSource{};
  int32_t rank = 0, world = 0, local_rank = 0, device = 0;
  std::string pci_bus_id = "";  // cut to fit, NUL-padded
};
format::Record identity_record(const IdentityFields& f);

// A clock anchor; `window_ns` is how long reading the two clocks took.
format::Record clock_record(int64_t monotonic_ns, int64_t realtime_ns, uint32_t window_ns);

struct KernelFields {
  uint32_t stream_id = 0;  // CUPTI's
  uint8_t device = 0;
  bool nccl = false;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation = 0;
  uint32_t name_id = 0;
  uint32_t context_id = 0;
};
// A kernel (format::ActivityKind::kKernel).
format::Record kernel_record(const KernelFields& f);

// The StringRecord chunks of `text` under `id` (one per kStringChunkBytes, the last one flagged;
// at most kMaxStringChunks, as the shim cuts long names).
std::vector<format::Record> string_records(uint32_t id, const std::string& text);

struct LinkFields {
  uint32_t tid = 0;
  format::Func func = format::Func::kUnknown;
  int64_t t_ns = 0;
  uint64_t comm = 0;
  uint64_t stream = 0;
  uint32_t correlation = 0;
  uint32_t seq = 0;
};
format::Record link_record(const LinkFields& f);

struct LaunchFields {
  uint32_t tid = 0;
  format::LaunchApi api = format::LaunchApi{};
  int64_t enter_ns = 0, exit_ns = 0;
  uint64_t stream = 0;
  uint32_t correlation = 0;
};
format::Record launch_record(const LaunchFields& f);

// An NVTX range of thread `tid` on no particular device.
format::Record nvtx_record(uint32_t tid, int64_t start_ns, int64_t end_ns, uint32_t name_id);

struct UniqueIdFields {
  uint32_t tid = 0;
  format::Func func = format::Func::kUnknown;
  int64_t enter_ns = 0, exit_ns = 0;
  uint64_t hash = 0;
};
format::Record unique_id_record(const UniqueIdFields& f);

// A CPU-scheduling sample of thread `tid`.
format::Record sched_record(uint32_t tid, int64_t t_ns, uint64_t on_cpu_ns, uint64_t wait_ns,
                            uint64_t timeslices);

struct StepFields {
  uint32_t ref_seq = 0;  // the seq of the step's first collective on the reference comm
  format::StepSource source = format::StepSource{};
  format::StepTiming timing = format::StepTiming{};
  uint8_t flags = 0;  // kStep* bits
  uint32_t step = 0;
  uint32_t calls = 0;
  int64_t start_ns = 0, arrive_ns = 0, sync_ns = 0;
  uint32_t duration_us = 0, compute_us = 0, exposed_us = 0, idle_us = 0;
  uint64_t bytes = 0;
};
format::Record step_record(const StepFields& f);

struct WindowFields {
  uint32_t text_id = 0;  // StringRecord id of the trigger's words, 0: none
  format::WindowTrigger trigger = format::WindowTrigger{};
  format::WindowEvent event = format::WindowEvent::kOpen;
  uint64_t id = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint64_t first_step = 0, end_step = 0;
  uint64_t detail_records = 0;
};
format::Record window_record(const WindowFields& f);

}  // namespace ncclwatch::test_support

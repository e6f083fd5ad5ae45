// Builds synthetic ncclwatch inputs straight from format.h (no shim needed): records of every
// kind, trace files (optionally torn), temporary directories and shared-memory segments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::trace::testing {

using format::Func;
using format::Record;

Record make_call(Func func, uint64_t comm, uint32_t seq, int64_t enter_ns, int64_t exit_ns,
                 uint64_t count = 1024, int32_t peer = -1);
Record make_group(Func func, uint32_t group_id, int64_t enter_ns);
Record make_comm(uint64_t comm, int32_t nranks, int32_t rank, int64_t t_ns, uint64_t parent = 0,
                 Func created_by = Func::kCommInitRank);
Record make_comm_end(uint64_t comm, int64_t t_ns);
Record make_identity(int32_t rank, int32_t world, int32_t local_rank, int32_t device,
                     const char* pci_bus_id = "");
Record make_clock(int64_t monotonic_ns, int64_t realtime_ns, uint32_t window_ns);
Record make_kernel(int64_t start_ns, int64_t end_ns, uint32_t correlation, uint32_t name_id,
                   bool nccl, uint32_t stream = 7, uint8_t device = 0);
// The StringRecord chunks of `text` under `id` (one per 56 bytes, last one flagged).
std::vector<Record> make_string(uint32_t id, const std::string& text);
Record make_link(int64_t t_ns, uint64_t comm, uint32_t seq, uint32_t correlation);
Record make_coll_gpu(int64_t start_ns, int64_t end_ns, uint64_t comm, uint32_t seq);
Record make_launch(int64_t enter_ns, int64_t exit_ns, uint64_t stream, uint32_t correlation);
Record make_nvtx(int64_t start_ns, int64_t end_ns, uint32_t name_id);
Record make_unique_id(uint64_t hash, int64_t t_ns);
Record make_sched(uint32_t tid, int64_t t_ns, uint64_t on_cpu_ns, uint64_t wait_ns,
                  uint64_t timeslices = 1);
// A step summary (CUPTI timing unless compute_us is kStepUnknownUs: then none).
Record make_step(uint32_t step, int64_t start_ns, uint32_t duration_us, uint32_t ref_seq,
                 int64_t arrive_ns, int64_t sync_ns, uint32_t compute_us, uint32_t exposed_us,
                 uint32_t idle_us);
Record make_window(format::WindowEvent event, uint64_t id, format::WindowTrigger trigger,
                   int64_t start_ns, int64_t end_ns, uint64_t first_step, uint64_t end_step,
                   uint32_t text_id = 0);

format::ProcessInfo make_process(const std::string& job, const std::string& host, int64_t pid,
                                 int32_t rank, int32_t world);
format::TraceHeader make_header(const format::ProcessInfo& process, uint32_t state,
                                uint64_t records, uint32_t mode = 0);

// Writes header + records (+ `torn_bytes` bytes of a partial record) to `path`.
void write_trace(const std::string& path, const format::TraceHeader& header,
                 const std::vector<Record>& records, std::size_t torn_bytes = 0);
// A closed trace of `records` for (job, host, pid, rank, world) at
// dir/ncclwatch.<host>.<pid>.trace.
std::string write_rank(const std::string& dir, const std::string& job, const std::string& host,
                       int64_t pid, int32_t rank, int32_t world,
                       const std::vector<Record>& records);

std::vector<char> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<char>& bytes);

// A fresh directory under /tmp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A shared-memory segment laid out as the shim lays it out, with a unique name per test
// process ("ncclwatch.<job>.<host>.<pid>" where job includes the test's pid), in /dev/shm or,
// given `shm_dir`, as a plain file there (a private stand-in for /dev/shm). Removed on
// destruction unless release() was called (salvage removes it).
class TestSegment {
 public:
  TestSegment(const std::string& job, const std::string& host, int64_t owner_pid, uint64_t capacity,
              const std::string& trace_path, const std::string& shm_dir = "");
  ~TestSegment();
  TestSegment(const TestSegment&) = delete;
  TestSegment& operator=(const TestSegment&) = delete;

  const std::string& name() const { return name_; }
  format::SegmentHeader& header();
  // Claims position `pos` and, if `commit`, publishes `record` there (slot.seq = pos + 1).
  void put(uint64_t pos, const Record& record, bool commit = true);
  // Producers claimed up to write_pos, the drain thread read up to read_pos.
  void set_positions(uint64_t read_pos, uint64_t write_pos);
  void release() { owned_ = false; }

 private:
  std::string name_;
  std::string shm_dir_;
  void* base_ = nullptr;
  std::size_t size_ = 0;
  uint64_t capacity_ = 0;
  bool owned_ = true;
};

// A job id unique to this test process and `tag` (segments of concurrent tests never collide).
std::string unique_job(const std::string& tag);

}  // namespace ncclwatch::trace::testing

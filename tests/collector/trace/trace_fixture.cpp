#include "trace_fixture.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "record_builder.h"

namespace ncclwatch::trace::testing {
namespace {

namespace ts = test_support;

constexpr uint32_t kTid = 4242;       // the writer thread of every record that names one
constexpr uint64_t kStream = 0xabc0;  // the calls' stream

void copy_text(char* out, std::size_t size, const std::string& text) {
  std::memset(out, 0, size);
  std::memcpy(out, text.data(), std::min(size - 1, text.size()));
}

}  // namespace

Record make_call(Func func, uint64_t comm, uint32_t seq, int64_t enter_ns, int64_t exit_ns,
                 uint64_t count, int32_t peer) {
  return ts::call_record({.tid = kTid,
                          .func = func,
                          .enter_ns = enter_ns,
                          .exit_ns = exit_ns,
                          .comm = comm,
                          .count = count,
                          .stream = kStream,
                          .seq = seq,
                          .peer = peer,
                          .datatype = 7});  // float32
}

Record make_group(Func func, uint32_t group_id, int64_t enter_ns) {
  Record r = ts::blank_record(format::RecordKind::kGroup, kTid);
  r.prefix.u8a = static_cast<uint8_t>(func);
  r.group.t_enter_ns = enter_ns;
  r.group.t_exit_ns = enter_ns + 10;
  r.group.group_id = group_id;
  r.group.depth = 1;
  return r;
}

Record make_comm(uint64_t comm, int32_t nranks, int32_t rank, int64_t t_ns, uint64_t parent,
                 Func created_by) {
  return ts::comm_record({.tid = kTid,
                          .created_by = created_by,
                          .enter_ns = t_ns,
                          .exit_ns = t_ns + 100,
                          .comm = comm,
                          .parent = parent,
                          .handle = 0x7f0000001000,
                          .nranks = nranks,
                          .rank = rank,
                          .device = rank % 8});
}

Record make_comm_end(uint64_t comm, int64_t t_ns) {
  return ts::comm_end_record(kTid, comm, t_ns, t_ns + 5);
}

Record make_identity(int32_t rank, int32_t world, int32_t local_rank, int32_t device,
                     const char* pci_bus_id) {
  return ts::identity_record({.tid = kTid,
                              .source = format::RankSource::kFirstComm,
                              .rank = rank,
                              .world = world,
                              .local_rank = local_rank,
                              .device = device,
                              .pci_bus_id = pci_bus_id});
}

Record make_clock(int64_t monotonic_ns, int64_t realtime_ns, uint32_t window_ns) {
  return ts::clock_record(monotonic_ns, realtime_ns, window_ns);
}

Record make_kernel(int64_t start_ns, int64_t end_ns, uint32_t correlation, uint32_t name_id,
                   bool nccl, uint32_t stream, uint8_t device) {
  return ts::kernel_record({.stream_id = stream,
                            .device = device,
                            .nccl = nccl,
                            .start_ns = start_ns,
                            .end_ns = end_ns,
                            .correlation = correlation,
                            .name_id = name_id});
}

std::vector<Record> make_string(uint32_t id, const std::string& text) {
  return ts::string_records(id, text);
}

Record make_link(int64_t t_ns, uint64_t comm, uint32_t seq, uint32_t correlation) {
  return ts::link_record({.tid = kTid,
                          .func = Func::kAllReduce,
                          .t_ns = t_ns,
                          .comm = comm,
                          .stream = kStream,
                          .correlation = correlation,
                          .seq = seq});
}

Record make_coll_gpu(int64_t start_ns, int64_t end_ns, uint64_t comm, uint32_t seq) {
  Record r = ts::blank_record(format::RecordKind::kCollGpu, kTid);
  r.prefix.u8a = static_cast<uint8_t>(Func::kAllReduce);
  r.coll_gpu.start_ns = start_ns;
  r.coll_gpu.end_ns = end_ns;
  r.coll_gpu.comm_id = comm;
  r.coll_gpu.stream = kStream;
  r.coll_gpu.seq = seq;
  return r;
}

Record make_launch(int64_t enter_ns, int64_t exit_ns, uint64_t stream, uint32_t correlation) {
  return ts::launch_record({.tid = kTid,
                            .api = format::LaunchApi::kRuntimeKernel,
                            .enter_ns = enter_ns,
                            .exit_ns = exit_ns,
                            .stream = stream,
                            .correlation = correlation});
}

Record make_nvtx(int64_t start_ns, int64_t end_ns, uint32_t name_id) {
  return ts::nvtx_record(kTid, start_ns, end_ns, name_id);
}

Record make_unique_id(uint64_t hash, int64_t t_ns) {
  return ts::unique_id_record({.tid = kTid,
                               .func = Func::kGetUniqueId,
                               .enter_ns = t_ns,
                               .exit_ns = t_ns + 1,
                               .hash = hash});
}

Record make_sched(uint32_t tid, int64_t t_ns, uint64_t on_cpu_ns, uint64_t wait_ns,
                  uint64_t timeslices) {
  return ts::sched_record(tid, t_ns, on_cpu_ns, wait_ns, timeslices);
}

Record make_step(uint32_t step, int64_t start_ns, uint32_t duration_us, uint32_t ref_seq,
                 int64_t arrive_ns, int64_t sync_ns, uint32_t compute_us, uint32_t exposed_us,
                 uint32_t idle_us) {
  return ts::step_record({.ref_seq = ref_seq,
                          .source = format::StepSource::kCollectives,
                          .timing = compute_us == format::kStepUnknownUs
                                        ? format::StepTiming::kNone
                                        : format::StepTiming::kCupti,
                          .step = step,
                          .calls = 4,
                          .start_ns = start_ns,
                          .arrive_ns = arrive_ns,
                          .sync_ns = sync_ns,
                          .duration_us = duration_us,
                          .compute_us = compute_us,
                          .exposed_us = exposed_us,
                          .idle_us = idle_us,
                          .bytes = 4096});
}

Record make_window(format::WindowEvent event, uint64_t id, format::WindowTrigger trigger,
                   int64_t start_ns, int64_t end_ns, uint64_t first_step, uint64_t end_step,
                   uint32_t text_id) {
  return ts::window_record({.text_id = text_id,
                            .trigger = trigger,
                            .event = event,
                            .id = id,
                            .start_ns = start_ns,
                            .end_ns = end_ns,
                            .first_step = first_step,
                            .end_step = end_step});
}

format::ProcessInfo make_process(const std::string& job, const std::string& host, int64_t pid,
                                 int32_t rank, int32_t world) {
  format::ProcessInfo p;
  std::memset(&p, 0, sizeof p);
  copy_text(p.job, sizeof p.job, job);
  copy_text(p.host, sizeof p.host, host);
  p.pid = pid;
  p.rank = rank;
  p.world_size = world;
  p.local_rank = rank >= 0 ? rank % 8 : -1;
  p.device = rank >= 0 ? rank % 8 : -1;
  p.start_monotonic_ns = 1'000'000;
  p.start_realtime_ns = 1'700'000'000'000'000'000 + 1'000'000;
  return p;
}

format::TraceHeader make_header(const format::ProcessInfo& process, uint32_t state,
                                uint64_t records, uint32_t mode) {
  format::TraceHeader h = format::trace_header(state, process);
  h.records = records;
  h.mode = mode;
  return h;
}

void write_trace(const std::string& path, const format::TraceHeader& header,
                 const std::vector<Record>& records, std::size_t torn_bytes) {
  // Unlink instead of truncating: ext4 flushes a truncated-and-rewritten file to disk on close
  // (auto_da_alloc), which made thousands of rewrites take seconds.
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&header), sizeof header);
  out.write(reinterpret_cast<const char*>(records.data()),
            static_cast<std::streamsize>(records.size() * sizeof(Record)));
  if (torn_bytes != 0) {
    std::vector<char> partial(torn_bytes, 0x5a);
    out.write(partial.data(), static_cast<std::streamsize>(partial.size()));
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string write_rank(const std::string& dir, const std::string& job, const std::string& host,
                       int64_t pid, int32_t rank, int32_t world,
                       const std::vector<Record>& records) {
  const std::string path = dir + "/ncclwatch." + host + "." + std::to_string(pid) + ".trace";
  write_trace(path,
              make_header(make_process(job, host, pid, rank, world), format::kTraceStateClosed,
                          records.size()),
              records);
  return path;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::filesystem::remove(path);  // see write_trace
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "ncclwatch-trace-test.XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string unique_job(const std::string& tag) {
  return "test-" + std::to_string(::getpid()) + "-" + tag;
}

TestSegment::TestSegment(const std::string& job, const std::string& host, int64_t owner_pid,
                         uint64_t capacity, const std::string& trace_path,
                         const std::string& shm_dir)
    : name_("ncclwatch." + job + "." + host + "." + std::to_string(owner_pid)),
      shm_dir_(shm_dir),
      capacity_(capacity) {
  // Plain POSIX shm (what Boost.Interprocess uses on Linux), so the tests also check that the
  // reader finds segments under the names the shim gives them.
  const int fd =
      shm_dir_.empty()
          ? ::shm_open(("/" + name_).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)
          : ::open((shm_dir_ + "/" + name_).c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("shm_open failed for " + name_);
  size_ = sizeof(format::SegmentHeader) + capacity * sizeof(format::RingSlot);
  if (::ftruncate(fd, static_cast<off_t>(size_)) != 0) {
    ::close(fd);
    throw std::runtime_error("ftruncate failed");
  }
  base_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base_ == MAP_FAILED) throw std::runtime_error("mmap failed");
  auto& h = header();
  h.magic = format::kSegmentMagic;
  h.layout_version = format::kLayoutVersion;
  h.header_size = sizeof(format::SegmentHeader);
  h.record_size = format::kRecordSize;
  h.slot_size = sizeof(format::RingSlot);
  h.capacity = capacity;
  h.process = make_process(job, host, owner_pid, -1, -1);
  copy_text(h.trace_path, sizeof h.trace_path, trace_path);
  h.state = format::kSegmentStateLive;
  h.mode = 0;
}

TestSegment::~TestSegment() {
  if (base_ != nullptr && base_ != MAP_FAILED) ::munmap(base_, size_);
  if (owned_ && shm_dir_.empty()) ::shm_unlink(("/" + name_).c_str());
  if (owned_ && !shm_dir_.empty()) ::unlink((shm_dir_ + "/" + name_).c_str());
}

format::SegmentHeader& TestSegment::header() {
  return *static_cast<format::SegmentHeader*>(base_);
}

void TestSegment::put(uint64_t pos, const Record& record, bool commit) {
  auto* slots = reinterpret_cast<format::RingSlot*>(static_cast<char*>(base_) +
                                                    sizeof(format::SegmentHeader));
  auto& slot = slots[pos % capacity_];
  slot.record = record;
  slot.seq = commit ? pos + 1 : 0;
  if (header().write_pos < pos + 1) header().write_pos = pos + 1;
}

void TestSegment::set_positions(uint64_t read_pos, uint64_t write_pos) {
  header().read_pos = read_pos;
  header().write_pos = write_pos;
}

}  // namespace ncclwatch::trace::testing

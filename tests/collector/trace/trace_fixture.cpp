#include "trace_fixture.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ncclwatch::trace::testing {
namespace {

Record blank(format::RecordKind kind) {
  Record r;
  std::memset(&r, 0, sizeof r);
  r.prefix.kind = kind;
  r.prefix.tid = 4242;
  return r;
}

void copy_text(char* out, std::size_t size, const std::string& text) {
  std::memset(out, 0, size);
  std::memcpy(out, text.data(), std::min(size - 1, text.size()));
}

}  // namespace

Record make_call(Func func, uint64_t comm, uint32_t seq, int64_t enter_ns, int64_t exit_ns,
                 uint64_t count, int32_t peer) {
  Record r = blank(format::RecordKind::kCall);
  r.prefix.u8a = static_cast<uint8_t>(func);
  r.call.t_enter_ns = enter_ns;
  r.call.t_exit_ns = exit_ns;
  r.call.comm_id = comm;
  r.call.count = count;
  r.call.stream = 0xabc0;
  r.call.seq = seq;
  r.call.peer = peer;
  r.call.datatype = 7;  // float32
  r.call.redop = 0;
  return r;
}

Record make_group(Func func, uint32_t group_id, int64_t enter_ns) {
  Record r = blank(format::RecordKind::kGroup);
  r.prefix.u8a = static_cast<uint8_t>(func);
  r.group.t_enter_ns = enter_ns;
  r.group.t_exit_ns = enter_ns + 10;
  r.group.group_id = group_id;
  r.group.depth = 1;
  return r;
}

Record make_comm(uint64_t comm, int32_t nranks, int32_t rank, int64_t t_ns, uint64_t parent,
                 Func created_by) {
  Record r = blank(format::RecordKind::kComm);
  r.prefix.u8a = static_cast<uint8_t>(created_by);
  r.comm.t_enter_ns = t_ns;
  r.comm.t_exit_ns = t_ns + 100;
  r.comm.comm_id = comm;
  r.comm.parent_id = parent;
  r.comm.handle = 0x7f0000001000;
  r.comm.nranks = nranks;
  r.comm.rank = rank;
  r.comm.device = rank % 8;
  return r;
}

Record make_comm_end(uint64_t comm, int64_t t_ns) {
  Record r = blank(format::RecordKind::kCommEnd);
  r.prefix.u8a = static_cast<uint8_t>(Func::kCommDestroy);
  r.comm_end.t_enter_ns = t_ns;
  r.comm_end.t_exit_ns = t_ns + 5;
  r.comm_end.comm_id = comm;
  return r;
}

Record make_identity(int32_t rank, int32_t world, int32_t local_rank, int32_t device,
                     const char* pci_bus_id) {
  Record r = blank(format::RecordKind::kIdentity);
  r.prefix.u8a = static_cast<uint8_t>(format::RankSource::kFirstComm);
  r.identity.rank = rank;
  r.identity.world_size = world;
  r.identity.local_rank = local_rank;
  r.identity.device = device;
  copy_text(r.identity.pci_bus_id, sizeof r.identity.pci_bus_id, pci_bus_id);
  return r;
}

Record make_clock(int64_t monotonic_ns, int64_t realtime_ns, uint32_t window_ns) {
  Record r = blank(format::RecordKind::kClock);
  r.prefix.tid = window_ns;
  r.clock.monotonic_ns = monotonic_ns;
  r.clock.realtime_ns = realtime_ns;
  return r;
}

Record make_kernel(int64_t start_ns, int64_t end_ns, uint32_t correlation, uint32_t name_id,
                   bool nccl, uint32_t stream, uint8_t device) {
  Record r = blank(format::RecordKind::kKernel);
  r.prefix.u8a = static_cast<uint8_t>(format::ActivityKind::kKernel);
  r.prefix.u8b = device;
  r.prefix.tid = stream;
  r.prefix.flags = nccl ? format::kKernelIsNccl : 0;
  r.kernel.start_ns = start_ns;
  r.kernel.end_ns = end_ns;
  r.kernel.correlation = correlation;
  r.kernel.name_id = name_id;
  return r;
}

std::vector<Record> make_string(uint32_t id, const std::string& text) {
  std::vector<Record> out;
  const std::size_t chunks = std::max<std::size_t>(
      1, (text.size() + format::kStringChunkBytes - 1) / format::kStringChunkBytes);
  for (std::size_t i = 0; i < chunks; ++i) {
    Record r = blank(format::RecordKind::kString);
    r.prefix.tid = id;
    r.prefix.u8a = static_cast<uint8_t>(i);
    if (i + 1 == chunks) r.prefix.flags = format::kStringLastChunk;
    const std::size_t begin = i * format::kStringChunkBytes;
    const std::size_t n =
        std::min(format::kStringChunkBytes, text.size() - std::min(begin, text.size()));
    std::memcpy(r.string.text, text.data() + begin, n);
    out.push_back(r);
  }
  return out;
}

Record make_link(int64_t t_ns, uint64_t comm, uint32_t seq, uint32_t correlation) {
  Record r = blank(format::RecordKind::kKernelLink);
  r.prefix.u8a = static_cast<uint8_t>(Func::kAllReduce);
  r.link.t_ns = t_ns;
  r.link.comm_id = comm;
  r.link.stream = 0xabc0;
  r.link.correlation = correlation;
  r.link.seq = seq;
  return r;
}

Record make_coll_gpu(int64_t start_ns, int64_t end_ns, uint64_t comm, uint32_t seq) {
  Record r = blank(format::RecordKind::kCollGpu);
  r.prefix.u8a = static_cast<uint8_t>(Func::kAllReduce);
  r.coll_gpu.start_ns = start_ns;
  r.coll_gpu.end_ns = end_ns;
  r.coll_gpu.comm_id = comm;
  r.coll_gpu.stream = 0xabc0;
  r.coll_gpu.seq = seq;
  return r;
}

Record make_launch(int64_t enter_ns, int64_t exit_ns, uint64_t stream, uint32_t correlation) {
  Record r = blank(format::RecordKind::kLaunch);
  r.prefix.u8a = static_cast<uint8_t>(format::LaunchApi::kRuntimeKernel);
  r.launch.t_enter_ns = enter_ns;
  r.launch.t_exit_ns = exit_ns;
  r.launch.stream = stream;
  r.launch.correlation = correlation;
  return r;
}

Record make_nvtx(int64_t start_ns, int64_t end_ns, uint32_t name_id) {
  Record r = blank(format::RecordKind::kNvtx);
  r.prefix.u8a = 0xff;
  r.nvtx.start_ns = start_ns;
  r.nvtx.end_ns = end_ns;
  r.nvtx.name_id = name_id;
  return r;
}

Record make_unique_id(uint64_t hash, int64_t t_ns) {
  Record r = blank(format::RecordKind::kUniqueId);
  r.prefix.u8a = static_cast<uint8_t>(Func::kGetUniqueId);
  r.unique_id.t_enter_ns = t_ns;
  r.unique_id.t_exit_ns = t_ns + 1;
  r.unique_id.id_hash = hash;
  return r;
}

Record make_sched(uint32_t tid, int64_t t_ns, uint64_t on_cpu_ns, uint64_t wait_ns,
                  uint64_t timeslices) {
  Record r = blank(format::RecordKind::kSched);
  r.prefix.tid = tid;
  r.sched.t_ns = t_ns;
  r.sched.on_cpu_ns = on_cpu_ns;
  r.sched.wait_ns = wait_ns;
  r.sched.timeslices = timeslices;
  return r;
}

Record make_step(uint32_t step, int64_t start_ns, uint32_t duration_us, uint32_t ref_seq,
                 int64_t arrive_ns, int64_t sync_ns, uint32_t compute_us, uint32_t exposed_us,
                 uint32_t idle_us) {
  Record r = blank(format::RecordKind::kStep);
  r.prefix.u8a = static_cast<uint8_t>(format::StepSource::kCollectives);
  r.prefix.u8b =
      static_cast<uint8_t>(compute_us == format::kStepUnknownUs ? format::StepTiming::kNone
                                                                : format::StepTiming::kCupti);
  r.prefix.tid = ref_seq;
  r.step.step = step;
  r.step.start_ns = start_ns;
  r.step.duration_us = duration_us;
  r.step.arrive_ns = arrive_ns;
  r.step.sync_ns = sync_ns;
  r.step.compute_us = compute_us;
  r.step.exposed_us = exposed_us;
  r.step.idle_us = idle_us;
  r.step.calls = 4;
  r.step.bytes = 4096;
  return r;
}

Record make_window(format::WindowEvent event, uint64_t id, format::WindowTrigger trigger,
                   int64_t start_ns, int64_t end_ns, uint64_t first_step, uint64_t end_step,
                   uint32_t text_id) {
  Record r = blank(format::RecordKind::kWindow);
  r.prefix.u8a = static_cast<uint8_t>(trigger);
  r.prefix.u8b = static_cast<uint8_t>(event);
  r.prefix.tid = text_id;
  r.window.id = id;
  r.window.start_ns = start_ns;
  r.window.end_ns = end_ns;
  r.window.first_step = first_step;
  r.window.end_step = end_step;
  return r;
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

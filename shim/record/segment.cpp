#include "record/segment.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <atomic>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cerrno>
#include <cstring>
#include <new>

namespace bip = boost::interprocess;

namespace ncclwatch::shim {

Segment::~Segment() {
  // The mapping is intentionally left in place: a thread of the application may still be inside
  // emit() while the process exits. The kernel unmaps it at exit.
}

uint64_t Segment::capacity_for(double ring_mb) {
  double bytes = ring_mb * 1024.0 * 1024.0 - sizeof(format::SegmentHeader);
  uint64_t slots = bytes <= 0 ? 0 : static_cast<uint64_t>(bytes / sizeof(format::RingSlot));
  uint64_t cap = 16;
  while (cap * 2 <= slots) cap *= 2;
  return cap;
}

std::string Segment::name_for(const std::string& job, const std::string& host, int64_t pid) {
  return "ncclwatch." + job + "." + host + "." + std::to_string(pid);
}

std::unique_ptr<Segment> Segment::create(const std::string& name, uint64_t capacity,
                                         const format::ProcessInfo& process,
                                         const std::string& trace_path, std::string* error) {
  std::unique_ptr<Segment> seg(new Segment());
  seg->name_ = name;
  seg->size_ = sizeof(format::SegmentHeader) + capacity * sizeof(format::RingSlot);
  try {
    bip::permissions perms(0600);
    // A leftover segment of an earlier process with the same pid is stale: replace it.
    bip::shared_memory_object::remove(name.c_str());
    bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write, perms);
    shm.truncate(static_cast<bip::offset_t>(seg->size_));
    int fd = shm.get_mapping_handle().handle;
    int rc = posix_fallocate(fd, 0, static_cast<off_t>(seg->size_));
    if (rc != 0) {
      bip::shared_memory_object::remove(name.c_str());
      *error = "cannot reserve " + std::to_string(seg->size_ >> 10) + " KiB in /dev/shm for " +
               name + ": " + std::strerror(rc);
      return nullptr;
    }
    // MAP_POPULATE: no page fault on the hot path the first time a slot is written.
    void* base =
        mmap(nullptr, seg->size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) {
      int err = errno;
      bip::shared_memory_object::remove(name.c_str());
      *error = "cannot map " + name + ": " + std::strerror(err);
      return nullptr;
    }
    seg->base_ = base;
  } catch (const bip::interprocess_exception& e) {
    bip::shared_memory_object::remove(name.c_str());
    *error = "cannot create shared memory " + name + ": " + e.what();
    return nullptr;
  }
  auto* header = new (seg->base_) format::SegmentHeader{};
  header->layout_version = format::kLayoutVersion;
  header->header_size = sizeof(format::SegmentHeader);
  header->record_size = format::kRecordSize;
  header->slot_size = sizeof(format::RingSlot);
  header->capacity = capacity;
  header->process = process;
  std::strncpy(header->trace_path, trace_path.c_str(), format::kPathSize - 1);
  header->state = format::kSegmentStateLive;
  seg->header_ = header;
  seg->slots_ = reinterpret_cast<format::RingSlot*>(static_cast<char*>(seg->base_) +
                                                    sizeof(format::SegmentHeader));
  // Magic last: a reader seeing it sees an initialised header.
  std::atomic_ref<uint64_t>(header->magic).store(format::kSegmentMagic, std::memory_order_release);
  return seg;
}

void Segment::remove() {
  if (removed_ || name_.empty()) return;
  removed_ = true;
  bip::shared_memory_object::remove(name_.c_str());
}

void Segment::abandon() {
  removed_ = true;
  base_ = nullptr;
  header_ = nullptr;
  slots_ = nullptr;
}

}  // namespace ncclwatch::shim

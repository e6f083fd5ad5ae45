// One process's shared-memory segment ("ncclwatch.<job>.<host>.<pid>" in /dev/shm, mode 0600):
// a SegmentHeader followed by the ring slots. Its pages are reserved at creation
// (posix_fallocate), so a full /dev/shm fails here, once, instead of SIGBUS on a later write.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

class Segment {
 public:
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates and maps the segment. On failure returns nullptr and sets *error to one line.
  static std::unique_ptr<Segment> create(const std::string& name, uint64_t capacity,
                                         const format::ProcessInfo& process,
                                         const std::string& trace_path, std::string* error);

  // Largest power-of-two slot count whose segment fits in ring_mb MiB (at least 16).
  static uint64_t capacity_for(double ring_mb);
  static std::string name_for(const std::string& job, const std::string& host, int64_t pid);

  format::SegmentHeader* header() const { return header_; }
  format::RingSlot* slots() const { return slots_; }
  const std::string& name() const { return name_; }

  // Removes the name from /dev/shm (the mapping stays valid until the process ends).
  void remove();
  // Forgets the mapping without unmapping (forked child: the parent owns it).
  void abandon();

 private:
  Segment() = default;
  std::string name_;
  void* base_ = nullptr;
  std::size_t size_ = 0;
  format::SegmentHeader* header_ = nullptr;
  format::RingSlot* slots_ = nullptr;
  bool removed_ = false;
};

}  // namespace ncclwatch::shim

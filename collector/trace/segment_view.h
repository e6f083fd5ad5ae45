// Read-only view of one shim shared-memory segment (Boost.Interprocess): header checks against
// the mapped size (never trusting capacity or positions), and committed-record reads that follow
// the ring protocol of format.h (slot.seq == pos + 1, acquire).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include "ncclwatch/format.h"

namespace ncclwatch::trace {

inline constexpr const char* kSegmentPrefix = "ncclwatch.";
inline constexpr const char* kShmDirectory = "/dev/shm";  // where shm_open objects live on Linux

// Names of the shim's segments in /dev/shm: "ncclwatch.<job>.<host>.<pid>" for `job`, or every
// "ncclwatch.*" when job is empty. Sorted. (Host names may contain dots, so the job is told
// apart by prefix here and confirmed from the header by the caller.)
std::vector<std::string> list_segments(const std::string& job,
                                       const std::string& shm_dir = kShmDirectory);

class SegmentView {
 public:
  // Maps `name` read-only and checks the header. false: error() says why.
  bool open(const std::string& name);

  const std::string& name() const { return name_; }
  const std::string& error() const { return error_; }
  // Usable, but odd (positions further apart than the ring, unknown state).
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Header snapshot taken at open(); write_pos/read_pos below read the live values.
  const format::SegmentHeader& header() const { return header_; }
  std::string job() const;
  std::string host() const;
  std::string trace_path() const;
  uint64_t capacity() const { return header_.capacity; }
  uint64_t write_pos() const;
  uint64_t read_pos() const;

  // Copies the record at ring position `pos` if it is committed there (not a hole, not
  // overwritten by a later position). Safe against a producer still writing: the slot's seq is
  // read before and after the copy.
  bool read(uint64_t pos, format::Record& out) const;

 private:
  const format::RingSlot* slots() const;

  std::string name_;
  std::string error_;
  std::vector<std::string> warnings_;
  boost::interprocess::shared_memory_object shm_;
  boost::interprocess::mapped_region region_;
  format::SegmentHeader header_{};
};

}  // namespace ncclwatch::trace

// Read-only view of one shim shared-memory segment: ownership checks before anything is mapped
// (docs/threat-model.md: /dev/shm is writable by every user, so a name there may be a symlink,
// a FIFO, or a file another user planted and may truncate under us), header checks against the
// mapped size (never trusting capacity or positions), and committed-record reads that follow
// the ring protocol of format.h (slot.seq == pos + 1, acquire).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "ncclwatch/capture_control.h"
#include "ncclwatch/format.h"

namespace ncclwatch::trace {

inline constexpr const char* kSegmentPrefix = "ncclwatch.";
inline constexpr const char* kShmDirectory = "/dev/shm";  // where shm_open objects live on Linux

// Names in /dev/shm that look like the shim's segments: "ncclwatch.<job>.<host>.<pid>" for `job`,
// or every "ncclwatch.*" when job is empty, of any file type (open() says what is wrong with a
// symlink or a FIFO). Sorted. (Host names may contain dots, so the job is told apart by prefix
// here and confirmed from the header by the caller.)
std::vector<std::string> list_segments(const std::string& job,
                                       const std::string& shm_dir = kShmDirectory);

class SegmentView {
 public:
  SegmentView() = default;
  ~SegmentView();
  SegmentView(const SegmentView&) = delete;
  SegmentView& operator=(const SegmentView&) = delete;

  // Maps `name` in `shm_dir` read-only and checks it: a regular file (never through a symlink),
  // owned by this user and writable by nobody else, then the header. false: error() says why
  // and foreign() whether it is someone else's (left for its owner, not an error of ours).
  bool open(const std::string& name, const std::string& shm_dir = kShmDirectory);

  // Removes the segment's name if it still names the object that was mapped. false: why.
  bool remove(std::string& why) const;

  const std::string& name() const { return name_; }
  const std::string& error() const { return error_; }
  bool foreign() const { return foreign_; }
  uid_t owner() const { return owner_; }
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
  // The drain thread's checkpoint (format.h, DrainCheckpoint); version 0 when it never wrote one
  // (or was writing it during every try).
  format::DrainCheckpoint drain_checkpoint() const;

  // `ncclwatch capture`: writes a request into the segment's CaptureRequest, which the owner's
  // drain thread reads (docs/always-on.md). The segment is reopened for writing, never through a
  // symlink, and only if it is still the object mapped here and this user's. false: *why.
  bool post_capture(const format::CaptureAsk& ask, std::string& why) const;

  // Copies the record at ring position `pos` if it is committed there (not a hole, not
  // overwritten by a later position). Safe against a producer still writing: the slot's seq is
  // read before and after the copy.
  bool read(uint64_t pos, format::Record& out) const;

  // Consistent copies of the live in-flight slots that were ever used (format.h: InFlightSlot),
  // only those of calls in flight now when active_only. Never blocks the writers: a slot being
  // written during every try is left out.
  std::vector<format::InFlightSlot> in_flight(bool active_only) const;

 private:
  const format::RingSlot* slots() const;
  const format::SegmentHeader* live_header() const {
    return static_cast<const format::SegmentHeader*>(base_);
  }
  void close();
  bool check_file(int dir_fd);
  bool check_header();

  std::string name_;
  std::string error_;
  bool foreign_ = false;
  uid_t owner_ = 0;
  std::vector<std::string> warnings_;
  int dir_fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  void* base_ = nullptr;
  std::size_t size_ = 0;
  format::SegmentHeader header_{};
};

}  // namespace ncclwatch::trace

#include "trace/segment_view.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "ncclwatch/in_flight_slot.h"
#include "ncclwatch/seqlock_copy.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::trace {
namespace {

uint64_t load_acquire(const uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

}  // namespace

std::vector<std::string> list_segments(const std::string& job, const std::string& shm_dir) {
  const std::string prefix = job.empty() ? std::string(kSegmentPrefix) : kSegmentPrefix + job + ".";
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(shm_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

SegmentView::~SegmentView() {
  close();
}

void SegmentView::close() {
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
  if (dir_fd_ >= 0) ::close(dir_fd_);
  dir_fd_ = -1;
}

namespace {

const char* file_type(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

std::string user_name(uid_t uid) {
  const struct passwd* pw = ::getpwuid(uid);
  return pw != nullptr && pw->pw_name != nullptr ? fmt::format("{} ({})", uid, pw->pw_name)
                                                 : std::to_string(uid);
}

}  // namespace

// Everything about the file that decides whether it may be mapped: decided on the name without
// following it first (a symlink or FIFO is never opened), then again on the opened descriptor
// (the name may have been replaced in between).
bool SegmentView::check_file(int dir_fd) {
  struct stat named {};
  if (::fstatat(dir_fd, name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) {
    error_ = fmt::format("cannot open segment: {}", std::strerror(errno));
    return false;
  }
  const uid_t me = ::geteuid();
  if (named.st_uid != me) {
    foreign_ = true;
    owner_ = named.st_uid;
    error_ = fmt::format("owned by uid {}, not by you (uid {}); left for its owner",
                         user_name(named.st_uid), me);
    return false;
  }
  if (!S_ISREG(named.st_mode)) {
    error_ = fmt::format("{}, not a segment; not opened", file_type(named.st_mode));
    return false;
  }
  const int fd =
      ::openat(dir_fd, name_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    error_ = fmt::format("cannot open segment: {}", std::strerror(errno));
    return false;
  }
  struct stat st {};
  const bool same = ::fstat(fd, &st) == 0 && st.st_dev == named.st_dev && st.st_ino == named.st_ino;
  if (!same || !S_ISREG(st.st_mode) || st.st_uid != me) {
    ::close(fd);
    error_ = "replaced while being opened; not read";
    return false;
  }
  owner_ = st.st_uid;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    // Others may have written the header (or hold it open to truncate it under our mapping).
    ::close(fd);
    error_ = fmt::format("writable by others (mode {:o}); not read", st.st_mode & 07777);
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) < sizeof(format::SegmentHeader)) {
    ::close(fd);
    error_ = fmt::format("segment too small for a header ({} of {} bytes)", st.st_size,
                         sizeof(format::SegmentHeader));
    return false;
  }
  size_ = static_cast<std::size_t>(st.st_size);
  void* base = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    size_ = 0;
    error_ = fmt::format("cannot map segment: {}", std::strerror(map_errno));
    return false;
  }
  base_ = base;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  return true;
}

bool SegmentView::open(const std::string& name, const std::string& shm_dir) {
  close();
  name_ = name;
  error_.clear();
  warnings_.clear();
  foreign_ = false;
  owner_ = 0;
  header_ = {};
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    error_ = fmt::format("'{}' is not a segment name", name);
    return false;
  }
  dir_fd_ = ::open(shm_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    error_ = fmt::format("cannot open {}: {}", shm_dir, std::strerror(errno));
    return false;
  }
  if (!check_file(dir_fd_)) return false;
  return check_header();
}

bool SegmentView::check_header() {
  std::memcpy(&header_, base_, sizeof header_);
  const auto& h = header_;
  if (h.magic != format::kSegmentMagic) {
    error_ = fmt::format("not an ncclwatch segment (bad magic {})", hex(h.magic));
    return false;
  }
  if (h.layout_version != format::kLayoutVersion) {
    error_ = fmt::format(
        "layout version {}, this ncclwatch reads version {} (segments of another version: use "
        "the ncclwatch that wrote them)",
        h.layout_version, format::kLayoutVersion);
    return false;
  }
  if (h.header_size != sizeof(format::SegmentHeader) || h.record_size != format::kRecordSize ||
      h.slot_size != sizeof(format::RingSlot)) {
    error_ = fmt::format("sizes header/record/slot {}/{}/{}, expected {}/{}/{}", h.header_size,
                         h.record_size, h.slot_size, sizeof(format::SegmentHeader),
                         format::kRecordSize, sizeof(format::RingSlot));
    return false;
  }
  const uint64_t room = (size_ - sizeof(format::SegmentHeader)) / sizeof(format::RingSlot);
  if (h.capacity == 0 || !std::has_single_bit(h.capacity) || h.capacity > room) {
    error_ = fmt::format(
        "capacity {} does not fit the segment (room for {} slots, must be a power of two)",
        h.capacity, room);
    return false;
  }
  const uint64_t w = write_pos(), r = read_pos();
  if (r > w) {
    error_ = fmt::format("read position {} beyond write position {}", r, w);
    return false;
  }
  if (w - r > h.capacity) {
    warnings_.push_back(fmt::format(
        "{} positions pending but the ring holds {}: the oldest are gone", w - r, h.capacity));
  }
  if (h.state != format::kSegmentStateLive && h.state != format::kSegmentStateClosed)
    warnings_.push_back(fmt::format("unknown segment state {}", h.state));
  return true;
}

bool SegmentView::remove(std::string& why) const {
  if (dir_fd_ < 0 || base_ == nullptr) {
    why = "segment not open";
    return false;
  }
  struct stat st {};
  if (::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    why = fmt::format("segment gone already: {}", std::strerror(errno));
    return false;
  }
  if (st.st_dev != dev_ || st.st_ino != ino_) {
    why = "the name now belongs to another object; left alone";
    return false;
  }
  if (::unlinkat(dir_fd_, name_.c_str(), 0) != 0) {
    why = fmt::format("cannot remove segment: {}", std::strerror(errno));
    return false;
  }
  return true;
}

std::string SegmentView::job() const {
  return bounded_string(header_.process.job, sizeof header_.process.job);
}
std::string SegmentView::host() const {
  return bounded_string(header_.process.host, sizeof header_.process.host);
}
std::string SegmentView::trace_path() const {
  return bounded_string(header_.trace_path, sizeof header_.trace_path);
}

uint64_t SegmentView::write_pos() const {
  return load_acquire(&live_header()->write_pos);
}

format::DrainCheckpoint SegmentView::drain_checkpoint() const {
  format::DrainCheckpoint cp{};
  if (base_ == nullptr || !format::seqlock_load(live_header()->drain, cp)) return {};
  return cp;
}

bool SegmentView::post_capture(const format::CaptureAsk& ask, std::string& why) const {
  if (base_ == nullptr || dir_fd_ < 0) {
    why = "segment not open";
    return false;
  }
  const int fd = ::openat(dir_fd_, name_.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = fmt::format("cannot open for writing: {}", std::strerror(errno));
    return false;
  }
  struct stat st {};
  const bool same = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev_ &&
                    st.st_ino == ino_ && st.st_uid == ::geteuid() &&
                    static_cast<std::size_t>(st.st_size) >= sizeof(format::SegmentHeader);
  if (!same) {
    ::close(fd);
    why = "the segment changed since it was read (not written)";
    return false;
  }
  void* w =
      ::mmap(nullptr, sizeof(format::SegmentHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (w == MAP_FAILED) {
    why = fmt::format("cannot map for writing: {}", std::strerror(errno));
    return false;
  }
  format::write_capture_request(static_cast<format::SegmentHeader*>(w)->capture, ask);
  ::munmap(w, sizeof(format::SegmentHeader));
  return true;
}

uint64_t SegmentView::read_pos() const {
  return load_acquire(&live_header()->read_pos);
}

const format::RingSlot* SegmentView::slots() const {
  return reinterpret_cast<const format::RingSlot*>(static_cast<const char*>(base_) +
                                                   sizeof(format::SegmentHeader));
}

std::vector<format::InFlightSlot> SegmentView::in_flight(bool active_only) const {
  std::vector<format::InFlightSlot> out;
  for (const auto& slot : live_header()->in_flight) {
    format::InFlightSlot copy{};
    if (!format::in_flight_read(slot, copy) || copy.owner_tid == 0) continue;
    if (copy.calls == 0 || (active_only && copy.active == 0)) continue;
    out.push_back(copy);
  }
  return out;
}

bool SegmentView::read(uint64_t pos, format::Record& out) const {
  const format::RingSlot& slot = slots()[pos & (header_.capacity - 1)];
  if (load_acquire(&slot.seq) != pos + 1) return false;
  std::memcpy(&out, &slot.record, sizeof out);
  // A producer may have reclaimed the slot during the copy (only possible while the owner
  // lives, i.e. with --force): then the copy is not the record at pos.
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return load_acquire(&slot.seq) == pos + 1;
}

}  // namespace ncclwatch::trace

#include "trace/segment_view.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <boost/interprocess/exceptions.hpp>

#include "trace/trace_header_check.h"

namespace ncclwatch::trace {
namespace bip = boost::interprocess;
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
    std::error_code type_ec;
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && entry.is_regular_file(type_ec)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool SegmentView::open(const std::string& name) {
  name_ = name;
  error_.clear();
  warnings_.clear();
  try {
    shm_ = bip::shared_memory_object(bip::open_only, name.c_str(), bip::read_only);
    bip::offset_t size = 0;
    if (!shm_.get_size(size) || size < static_cast<bip::offset_t>(sizeof(format::SegmentHeader))) {
      error_ = fmt::format("segment too small for a header ({} of {} bytes)", size,
                           sizeof(format::SegmentHeader));
      return false;
    }
    region_ = bip::mapped_region(shm_, bip::read_only);
  } catch (const bip::interprocess_exception& e) {
    error_ = fmt::format("cannot map segment: {}", e.what());
    return false;
  }
  std::memcpy(&header_, region_.get_address(), sizeof header_);
  const auto& h = header_;
  if (h.magic != format::kSegmentMagic) {
    error_ = fmt::format("not an ncclwatch segment (bad magic {})", hex(h.magic));
    return false;
  }
  if (h.layout_version != format::kLayoutVersion) {
    error_ = fmt::format("layout version {}, this ncclwatch reads version {}", h.layout_version,
                         format::kLayoutVersion);
    return false;
  }
  if (h.header_size != sizeof(format::SegmentHeader) || h.record_size != format::kRecordSize ||
      h.slot_size != sizeof(format::RingSlot)) {
    error_ = fmt::format("sizes header/record/slot {}/{}/{}, expected {}/{}/{}", h.header_size,
                         h.record_size, h.slot_size, sizeof(format::SegmentHeader),
                         format::kRecordSize, sizeof(format::RingSlot));
    return false;
  }
  const uint64_t room =
      (region_.get_size() - sizeof(format::SegmentHeader)) / sizeof(format::RingSlot);
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
  return load_acquire(&static_cast<const format::SegmentHeader*>(region_.get_address())->write_pos);
}

uint64_t SegmentView::read_pos() const {
  return load_acquire(&static_cast<const format::SegmentHeader*>(region_.get_address())->read_pos);
}

const format::RingSlot* SegmentView::slots() const {
  return reinterpret_cast<const format::RingSlot*>(static_cast<const char*>(region_.get_address()) +
                                                   sizeof(format::SegmentHeader));
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

#include "trace/trace_header_check.h"

#include <cstring>

#include <fmt/format.h>

namespace ncclwatch::trace {

std::string bounded_string(const char* field, std::size_t size) {
  const auto* end = static_cast<const char*>(std::memchr(field, '\0', size));
  std::string out(field, end ? static_cast<std::size_t>(end - field) : size);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

std::string hex(uint64_t value) {
  return fmt::format("{:#x}", value);
}

HeaderVerdict check_trace_header(const format::TraceHeader& h) {
  HeaderVerdict v;
  if (h.magic != format::kTraceMagic) {
    v.foreign = true;
    v.error = h.magic == format::kSegmentMagic
                  ? "a shared-memory segment image, not a trace file (use `ncclwatch collect`)"
                  : fmt::format("not an ncclwatch trace (bad magic {})", hex(h.magic));
    return v;
  }
  if (h.layout_version < format::kMinTraceLayoutVersion ||
      h.layout_version > format::kLayoutVersion) {
    v.error = fmt::format("layout version {}, this ncclwatch reads versions {} to {}",
                          h.layout_version, format::kMinTraceLayoutVersion, format::kLayoutVersion);
    return v;
  }
  if (h.header_size != sizeof(format::TraceHeader)) {
    v.error =
        fmt::format("header size {}, expected {}", h.header_size, sizeof(format::TraceHeader));
    return v;
  }
  if (h.record_size != format::kRecordSize) {
    v.error = fmt::format("record size {}, expected {}", h.record_size, format::kRecordSize);
    return v;
  }
  v.usable = true;
  if (h.layout_version < 2)
    v.warnings.push_back(fmt::format(
        "layout version {} (an older ncclwatch): no entry evidence, so a call this rank never "
        "returned from is not visible",
        h.layout_version));
  if (h.state != format::kTraceStateOpen && h.state != format::kTraceStateClosed &&
      h.state != format::kTraceStateSalvaged) {
    v.warnings.push_back(fmt::format("unknown header state {} (treated as not closed)", h.state));
  }
  const auto& p = h.process;
  if (std::memchr(p.job, '\0', sizeof p.job) == nullptr)
    v.warnings.push_back("job id not NUL-terminated (cut)");
  if (std::memchr(p.host, '\0', sizeof p.host) == nullptr)
    v.warnings.push_back("host name not NUL-terminated (cut)");
  if (p.pid < 0) v.warnings.push_back(fmt::format("negative pid {}", p.pid));
  if (p.rank < -1 || p.world_size < -1 || p.world_size == 0 ||
      (p.rank >= 0 && p.world_size > 0 && p.rank >= p.world_size)) {
    v.warnings.push_back(
        fmt::format("implausible rank {} of world size {} (ignored)", p.rank, p.world_size));
  }
  if (h.mode > 2) v.warnings.push_back(fmt::format("unknown timing mode {}", h.mode));
  const uint32_t policy = format::kernel_filter_policy(h.kernel_filter);
  if (policy > format::kKernelFilterSampled ||
      (policy == format::kKernelFilterSampled &&
       format::kernel_filter_every(h.kernel_filter) < 2) ||
      (policy != format::kKernelFilterSampled &&
       format::kernel_filter_every(h.kernel_filter) != 0)) {
    v.warnings.push_back(fmt::format("unknown kernel filter 0x{:08x} (ignored)", h.kernel_filter));
  }
  return v;
}

}  // namespace ncclwatch::trace

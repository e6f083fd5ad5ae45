#include "record/in_flight_monitor.h"

#include <cinttypes>
#include <cstdio>

#include "ncclwatch/in_flight_slot.h"
#include "record/ring.h"

namespace ncclwatch::shim {
namespace {

std::string describe_hang(const format::SegmentHeader& h, const format::InFlightSlot& s,
                          int64_t age_ns) {
  const auto func = static_cast<format::Func>(s.entry.func);
  char rank[32];
  if (h.process.rank >= 0) {
    std::snprintf(rank, sizeof rank, "rank %d", h.process.rank);
  } else {
    std::snprintf(rank, sizeof rank, "pid %" PRId64, h.process.pid);
  }
  char call[96];
  if (format::is_collective(func) || format::is_p2p(func)) {
    std::snprintf(call, sizeof call, "%s #%u", format::nccl_api_name(func), s.entry.seq);
  } else {
    std::snprintf(call, sizeof call, "%s", format::nccl_api_name(func));
  }
  char comm[48] = "";
  if (s.entry.comm_id != 0) std::snprintf(comm, sizeof comm, " on comm %#" PRIx64, s.entry.comm_id);
  char line[1024];
  std::snprintf(line, sizeof line,
                "ncclwatch: %s waiting %" PRId64 " s in %s%s (host %.64s, pid %" PRId64
                ", thread %u); trace flushed to %.256s, segment kept; `ncclwatch status --stacks` "
                "shows every rank and where the ones behind are in their Python code\n",
                rank, age_ns / 1'000'000'000, call, comm, h.process.host, h.process.pid,
                s.owner_tid, h.trace_path);
  return line;
}

}  // namespace

bool InFlightMonitor::scan(int64_t now, std::string* line) {
  if (header_ == nullptr) return false;
  const format::InFlightSlot* oldest = nullptr;
  format::InFlightSlot copies[format::kInFlightSlots];
  for (std::size_t i = 0; i < format::kInFlightSlots; ++i) {
    const format::InFlightSlot& slot = header_->in_flight[i];
    if (__atomic_load_n(&slot.owner_tid, __ATOMIC_RELAXED) == 0) continue;
    format::InFlightSlot& s = copies[i];
    if (!format::in_flight_read(slot, s) || s.active == 0 || s.owner_tid == 0) continue;
    const int64_t age = now - s.entry.t_enter_ns;
    if (age >= kReportAfterNs && recorded_[i] != s.entry.t_enter_ns) {
      if (ring_->push(format::in_flight_record(s, now, format::InFlightSource::kDrain)))
        recorded_[i] = s.entry.t_enter_ns;
    }
    if (oldest == nullptr || s.entry.t_enter_ns < oldest->entry.t_enter_ns) oldest = &s;
  }
  if (hang_ns_ <= 0 || oldest == nullptr) return false;
  const int64_t age = now - oldest->entry.t_enter_ns;
  if (age < hang_ns_) return false;
  if (oldest->owner_tid == warned_tid_ && oldest->entry.t_enter_ns == warned_enter_ns_)
    return false;
  warned_tid_ = oldest->owner_tid;
  warned_enter_ns_ = oldest->entry.t_enter_ns;
  ring_->push(format::in_flight_record(*oldest, now, format::InFlightSource::kWatchdog));
  if (line != nullptr) *line = describe_hang(*header_, *oldest, age);
  return true;
}

void InFlightMonitor::record_all(int64_t now, format::InFlightSource source) {
  if (header_ == nullptr) return;
  for (const auto& slot : header_->in_flight) {
    if (__atomic_load_n(&slot.owner_tid, __ATOMIC_RELAXED) == 0) continue;
    format::InFlightSlot s;
    if (format::in_flight_read(slot, s) && s.active != 0 && s.owner_tid != 0)
      ring_->push(format::in_flight_record(s, now, source));
  }
}

}  // namespace ncclwatch::shim

#include "record/recent_records.h"

#include <algorithm>

#include "record/capture_plan.h"

namespace ncclwatch::shim {

bool is_return_of(const format::Record& record, uint32_t tid, int64_t enter_ns) {
  if (record.prefix.tid != tid) return false;
  switch (record.prefix.kind) {
    case format::RecordKind::kCall:
      return record.call.t_enter_ns == enter_ns;
    case format::RecordKind::kGroup:
      return record.group.t_enter_ns == enter_ns;
    default:
      return false;
  }
}

void RecentRecords::hold(const format::Record& record) {
  if (ring_.empty() || !format::is_detail_kind(record.prefix.kind)) return;
  ring_[next_] = record;
  next_ = (next_ + 1) % ring_.size();
  count_ = std::min(count_ + 1, ring_.size());
}

int64_t RecentRecords::oldest_time() const {
  int64_t oldest = INT64_MIN;
  for (std::size_t i = 0; i < count_; ++i) {
    int64_t t = 0;
    if (CapturePlan::detail_time(at(i), &t)) oldest = oldest == INT64_MIN ? t : std::min(oldest, t);
  }
  return oldest;
}

bool RecentRecords::take_return(uint32_t tid, int64_t enter_ns, format::Record* out) {
  // Newest first: the return was drained just before the in-flight record that names it.
  for (std::size_t i = count_; i-- > 0;) {
    format::Record& r = at(i);
    if (!is_return_of(r, tid, enter_ns)) continue;
    *out = r;
    r.prefix.kind = format::RecordKind::kInvalid;  // taken: a hang's window must not repeat it
    return true;
  }
  return false;
}

}  // namespace ncclwatch::shim

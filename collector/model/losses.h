// Everything one rank's shim counted instead of recording: the ring and CUPTI drops that headers
// carry since layout version 1, and the LossCounts of version 3 (format.h). One struct and one
// list of kinds, so the report's first lines, its rank table, its JSON, `ncclwatch dump` and
// `ncclwatch status` name the same losses the same way.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ncclwatch/format.h"

namespace ncclwatch::model {

struct Losses {
  uint64_t ring_full = 0;      // records dropped because the ring was full
  uint64_t cupti_dropped = 0;  // records CUPTI reported dropped (or with zero GPU timestamps)
  format::LossCounts counts{};

  // One kind of loss, for printing: JSON key, words for people, count, unit.
  struct Entry {
    const char* key;
    const char* label;
    const char* unit;
    uint64_t count;
  };
  static constexpr std::size_t kKinds = 2 + std::size(format::kLossFields);

  static Losses of(const format::TraceHeader& h) {
    Losses l;
    l.ring_full = h.dropped;
    l.cupti_dropped = h.cupti_dropped;
    // Versions 1 and 2 had zeros (reserved) here: nothing of these kinds was counted; version 3
    // had its last field reserved (detail_evicted since version 5).
    if (h.layout_version >= 3) l.counts = h.losses;
    if (h.layout_version < 5) l.counts.detail_evicted = 0;
    return l;
  }
  // A copy of a segment header (the owner may still be counting: the figures are a snapshot).
  static Losses of(const format::SegmentHeader& h) {
    Losses l;
    l.ring_full = h.dropped;
    l.cupti_dropped = h.cupti_dropped;
    l.counts = h.losses;
    return l;
  }

  // Every kind in a fixed order, zeros included.
  std::array<Entry, kKinds> entries() const {
    std::array<Entry, kKinds> out{};
    out[0] = {"ring_full", "ring full", "records", ring_full};
    out[1] = {"cupti_dropped", "CUPTI dropped", "records", cupti_dropped};
    std::size_t i = 2;
    for (const auto& f : format::kLossFields)
      out[i++] = {f.key, f.label, f.unit, counts.*f.counter};
    return out;
  }
  // The rank table's `dropped` column, as it always was: records that never reached the ring.
  uint64_t dropped() const { return ring_full + cupti_dropped; }
  // The rank table's `lost` column: everything else counted (mixed units; the JSON has each).
  uint64_t lost() const {
    uint64_t n = 0;
    for (const auto& f : format::kLossFields) n += counts.*f.counter;
    return n;
  }
  bool any() const { return dropped() + lost() > 0; }

  Losses& operator+=(const Losses& o) {
    ring_full += o.ring_full;
    cupti_dropped += o.cupti_dropped;
    for (const auto& f : format::kLossFields) counts.*f.counter += o.counts.*f.counter;
    return *this;
  }
};

}  // namespace ncclwatch::model

// The per-thread in-flight slots of a segment (format::InFlightSlot): claiming one for the
// calling thread, and the drain thread's look at all of them (InFlightMonitor).
//
// Why slots and not an entry record in the ring: a few plain stores into a slot the thread owns
// cost a few ns on the hot path, where a second ring push per call (CAS + 64-byte copy + release)
// costs about as much as the call record itself; the drain thread turns slots of calls that stay
// in flight into InFlightRecords, so the evidence still reaches the trace file (see format.h).
#pragma once

#include <cstdint>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

class Ring;

// Claims a free slot of `header` for thread `tid` (CAS on owner_tid). nullptr when all are
// taken (counted in header->losses.in_flight_overflow). Off the hot path: once per thread and
// recorder.
format::InFlightSlot* claim_in_flight_slot(format::SegmentHeader* header, uint32_t tid) noexcept;

// Frees a slot claimed by the calling thread (thread exit).
void release_in_flight_slot(format::InFlightSlot* slot) noexcept;

}  // namespace ncclwatch::shim

// A rank's NCCL calls as a node file holds them (collector/reduce/rank_codec.h). A training job
// repeats the same few calls every step: the same communicator, stream, size, sequence and kernel
// steps, only the times differ. So each call is its shape, an index into the shapes the rank has
// written before (a new one written in full the first time), and its four times as differences:
// ~12 bytes a call instead of ~36 field by field, and 80 in memory. Lossless. The shapes come
// first, then each time as a column of its own (entries, durations, GPU starts, GPU ends):
// columns of alike numbers compress better in the section's zstd frame than calls interleaved.
#pragma once

#include <vector>

#include "model/rank_trace.h"
#include "reduce/byte_codec.h"

namespace ncclwatch::reduce {

// At most this many shapes are remembered; a call whose shape is new past them is written in
// full each time (a job whose calls never repeat costs what it did without shapes).
inline constexpr std::size_t kMaxCallShapes = std::size_t{1} << 16;

// Calls in enter order (the analyses take them so; the reader refuses any other order).
void write_calls(ByteWriter& w, const std::vector<model::CallEvent>& calls);
void read_calls(ByteReader& r, std::vector<model::CallEvent>& calls);

}  // namespace ncclwatch::reduce

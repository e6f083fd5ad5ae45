// The GPU records' digest (analysis/rank_digest.h) and the collector's part of them
// (model/dropped_gpu_records.h) in a node file. Interval sets are written as gaps and lengths
// (a few bytes a span instead of 16); the reader checks they are sorted and disjoint.
#pragma once

#include "analysis/rank_digest.h"
#include "model/dropped_gpu_records.h"
#include "reduce/byte_codec.h"

namespace ncclwatch::reduce {

void write_intervals(ByteWriter& w, const std::vector<analysis::Interval>& spans);
// Any intervals in order (windows may touch or repeat); false when the bytes are bad.
bool read_intervals(ByteReader& r, std::vector<analysis::Interval>& out);

void write_digest(ByteWriter& w, const analysis::RankDigest& d);
bool read_digest(ByteReader& r, analysis::RankDigest& d);

void write_dropped(ByteWriter& w, const model::DroppedGpuRecords& d);
bool read_dropped(ByteReader& r, model::DroppedGpuRecords& d);

}  // namespace ncclwatch::reduce

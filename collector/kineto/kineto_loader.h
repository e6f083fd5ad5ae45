// Reads PyTorch-profiler (Kineto) Chrome-trace files, one rank per file, into the same model the
// ncclwatch trace reader produces, so the matcher and the analyses run unchanged on them.
//
// Files may be .json or .json.gz (gzip detected by its magic, not the name) and gigabytes large:
// they are decompressed and split into events in fixed-size chunks, so memory grows with what is
// kept (kernels, collectives), never with the file size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/job_trace.h"

namespace ncclwatch::kineto {

// Bounds on what an untrusted file may make the reader hold or inflate.
struct LoadLimits {
  // A .gz file may inflate to at most this many times its compressed size (and at least
  // min_inflated_bytes): real traces inflate 10-20x, a gzip bomb ~1000x. 0 = no bound.
  uint64_t max_inflate_ratio = 100;
  uint64_t min_inflated_bytes = uint64_t{256} << 20;
  std::size_t max_event_bytes = std::size_t{16} << 20;  // one event (EventSplitter)
};

// Loads every file given; a directory contributes the .json / .json.gz files directly inside it
// (sorted by name). One problem line per file that cannot be used (not JSON, not a trace, no GPU
// events, truncated gzip, rank already seen); a file cut short keeps the events read before the
// cut and is marked info.complete = false. Ranks are sorted by global rank, unknown ranks last.
// Files are parsed in parallel (one thread per file, up to the number of cores). Like
// trace::load_job (the ncclwatch trace loader), the problems are in JobTrace::problems.
model::JobTrace load_job(const std::vector<std::string>& paths_or_dirs,
                         const LoadLimits& limits = {});

// One file. Returns nothing (and appends one problem) when the file holds no usable rank.
std::optional<model::RankTrace> load_rank(const std::string& path,
                                          std::vector<model::InputProblem>& problems,
                                          const LoadLimits& limits = {});

}  // namespace ncclwatch::kineto

// Reads PyTorch-profiler (Kineto) Chrome-trace files, one rank per file, into the same model the
// ncclwatch trace reader produces, so the matcher and the analyses run unchanged on them.
//
// Files may be .json or .json.gz (gzip detected by its magic, not the name) and gigabytes large:
// they are decompressed and split into events in fixed-size chunks, so memory grows with what is
// kept (kernels, collectives), never with the file size.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/job_trace.h"

namespace ncclwatch::kineto {

// Loads every file given; a directory contributes the .json / .json.gz files directly inside it
// (sorted by name). One problem line per file that cannot be used (not JSON, not a trace, no GPU
// events, truncated gzip, rank already seen); a file cut short keeps the events read before the
// cut and is marked info.complete = false. Ranks are sorted by global rank, unknown ranks last.
// Files are parsed in parallel (one thread per file, up to the number of cores). Problems are
// appended to `problems` only; the caller merges them into JobTrace::problems.
model::JobTrace load_job(const std::vector<std::string>& paths_or_dirs,
                         std::vector<model::InputProblem>& problems);

// One file. Returns nothing (and appends one problem) when the file holds no usable rank.
std::optional<model::RankTrace> load_rank(const std::string& path,
                                          std::vector<model::InputProblem>& problems);

}  // namespace ncclwatch::kineto

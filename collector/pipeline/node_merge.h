// `report`'s load of an ncclwatch trace directory that holds node files (`ncclwatch reduce`,
// collector/reduce/node_file.h): each rank comes from a node file when the file is there and
// still describes its trace (same file names, process and record count), else from its trace,
// read as the lean load reads it (lean_load.h). A rank whose trace is not in the directory (the
// traces stayed on their nodes) comes from its node file alone. The report says which ranks
// came from node files and why any did not (a note; a stale or damaged node file: a problem).
//
// A rank from a node file is the rank of the lean load, field for field: the report is the same
// byte for byte but for that note (tests/scenarios). One thing differs without the trace: when
// StepDetector::agree() gives such a rank the job's steps, its compute kernels cannot be counted
// again under them (RankDigest::reload): the report warns and leaves the rank out of the kernel
// counts (docs/multi-node.md).
#pragma once

#include <string>

#include "model/job_trace.h"
#include "trace/job_loader.h"

namespace ncclwatch::pipeline {

// The job in `dir`, with node files where they serve (`node_files`) and the rest as
// `options` loads it. Without node files in `dir`: trace::load_job.
model::JobTrace load_traces_and_node_files(const std::string& dir,
                                           const trace::JobLoadOptions& options, bool node_files);

}  // namespace ncclwatch::pipeline

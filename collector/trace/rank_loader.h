// One trace file -> one model::RankTrace, streamed in chunks (memory: the model plus one 1 MiB
// buffer). Every problem with the file becomes one InputProblem line; whatever is valid is kept.
#pragma once

#include <string>
#include <vector>

#include "model/job_trace.h"
#include "model/rank_trace.h"

namespace ncclwatch::trace {

// Loads `path`. A file whose header is unusable (foreign, wrong version, ...) yields a RankTrace
// with info.records == 0 and info.complete == false, plus a problem line saying why.
model::RankTrace load_rank(const std::string& path, std::vector<model::InputProblem>& problems);

}  // namespace ncclwatch::trace

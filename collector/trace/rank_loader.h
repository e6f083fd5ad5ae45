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
// Step summaries (StepRecord) are checked and counted but kept in RankTrace::steps only with
// `keep_steps` or after a whole-run window opened (NCCLWATCH_DETAIL=all: full detail outweighs
// them, and the report takes the history from memory); otherwise the report streams them from
// the file (collector/history): a long run's summaries would outweigh its windows' detail.
model::RankTrace load_rank(const std::string& path, std::vector<model::InputProblem>& problems,
                           bool keep_steps = false);

// The parts of one process's trace (format.h, ProcessInfo::part; NCCLWATCH_MAX_MB), in part
// order, as one rank: the records of every part in turn; identity, state and counts from the
// last part (its header counts the whole run). One path: load_rank.
model::RankTrace load_rank_parts(const std::vector<std::string>& paths,
                                 std::vector<model::InputProblem>& problems,
                                 bool keep_steps = false);

}  // namespace ncclwatch::trace

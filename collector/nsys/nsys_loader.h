// Reads Nsight Systems SQLite exports (`nsys export --type sqlite`), one file per job, node or
// rank, into the model every analysis reads (collector/nsys/nsys_file_reader.h for one file).
// Ranks are numbered from the launcher's rank variable each file recorded when every file holds
// one process with one; else by device order, file by file (ordered by the recorded node rank
// when every file has one); the report says which. `.nsys-rep` reports are exported first with
// `nsys` from PATH, into a private temporary directory removed afterwards.
#pragma once

#include <string>
#include <vector>

#include "model/job_trace.h"
#include "nsys/nsys_file_reader.h"

namespace ncclwatch::nsys {

// Files or directories (a directory contributes the SQLite files directly inside it, by name;
// its .nsys-rep reports too). Problems and notes go into the returned JobTrace.
model::JobTrace load_job(const std::vector<std::string>& paths_or_dirs,
                         const NsysLimits& limits = {});

}  // namespace ncclwatch::nsys

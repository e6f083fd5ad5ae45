// All trace files of one job in a directory -> model::JobTrace. Files are loaded in parallel
// (one thread per core); every problem with the input becomes one InputProblem line:
// foreign files, unreadable or truncated files, ranks with no records, two files claiming one
// rank (both kept), ranks missing from the world, and a directory holding several jobs (one is
// chosen and the line says how to select another).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/job_trace.h"
#include "ncclwatch/format.h"

namespace ncclwatch::trace {

struct JobLoadProgress {
  std::size_t files_done = 0;
  std::size_t files_total = 0;
  uint64_t records_total = 0;  // records in all files of the job (from the file sizes)
  double elapsed_s = 0;
};

struct TraceFileEntry;

struct JobLoadOptions {
  std::string job;       // the job to load; empty: the job with the most ranks
  unsigned threads = 0;  // 0: std::thread::hardware_concurrency()
  // Called on the calling thread about every progress_every once the load has taken longer
  // than progress_after (the CLI prints it to stderr).
  std::function<void(const JobLoadProgress&)> progress;
  std::chrono::milliseconds progress_after{1000};
  std::chrono::milliseconds progress_every{250};
  // Keep every rank's step summaries in RankTrace::steps (rank_loader.h: by default only for a
  // whole-run window; the report streams them).
  bool keep_steps = false;
  // Called on a loading thread with each rank as soon as it is read (before the ranks are sorted
  // and checked); may drop what the caller will not need (collector/pipeline/lean_load.h).
  std::function<void(const TraceFileEntry& file, model::RankTrace& rank)> on_rank;
};

// A trace file found in the directory, by its header.
struct TraceFileEntry {
  std::string path;
  format::TraceHeader header{};
  std::string job;
  uint64_t records = 0;  // whole records in the file (in all its parts)
  // Every part of the process's trace in part order (format.h, ProcessInfo::part): `path` alone
  // unless NCCLWATCH_MAX_MB split it; load_rank_parts loads them as one rank.
  std::vector<std::string> parts;
};

// The trace files of one job, chosen as load_job would, without loading them (callers that
// stream rank by rank use this plus load_rank).
struct JobIndex {
  std::string job;
  std::vector<TraceFileEntry> files;  // sorted by path
  std::vector<model::InputProblem> problems;
};

JobIndex index_job(const std::string& dir, const JobLoadOptions& options = {});

// Loads every rank of the chosen job. ranks are sorted by global rank, unknown ranks last.
model::JobTrace load_job(const std::string& dir, const JobLoadOptions& options = {});

// A rank that was read elsewhere (a node file: collector/reduce), with what its read said.
struct PreloadedRank {
  model::RankTrace rank;
  std::vector<model::InputProblem> problems;
};

// load_job of an index made by index_job(dir): index.files[i] is read unless preloaded[i] holds
// it (preloaded is empty or as long as index.files); `extra` ranks (of no file in the index) are
// taken too. Problems come in index order, then the extra ranks', then the world's checks, as
// load_job gives them.
model::JobTrace load_indexed(const std::string& dir, JobIndex index, const JobLoadOptions& options,
                             std::vector<std::optional<PreloadedRank>> preloaded = {},
                             std::vector<PreloadedRank> extra = {});

}  // namespace ncclwatch::trace

#include "trace/job_loader.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

#include "ncclwatch/names.h"
#include "trace/parallel_for.h"
#include "trace/rank_loader.h"
#include "trace/trace_file_reader.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::trace {
namespace fs = std::filesystem;
namespace {

// What the header scan learned about one directory entry.
struct Scanned {
  std::optional<TraceFileEntry> entry;
  std::optional<model::InputProblem> problem;
};

Scanned scan_one(const std::string& path) {
  Scanned s;
  TraceFileReader reader(1);
  if (!reader.open(path)) {
    // The trace directory legitimately holds other files (NCCL debug logs, topology dumps, a
    // report.json): a foreign file is only worth a line when its name claims to be a trace.
    if (reader.foreign() && !path.ends_with(".trace")) return s;
    const std::string message = reader.foreign() ? "skipped (foreign file): " + reader.error()
                                                 : "unreadable: " + reader.error();
    s.problem = model::InputProblem{path, message};
    return s;
  }
  TraceFileEntry e;
  e.path = path;
  e.header = reader.header();
  e.job = bounded_string(e.header.process.job, sizeof e.header.process.job);
  e.records = reader.record_count();
  e.parts = {path};
  s.entry = std::move(e);
  return s;
}

std::string rank_list(const std::vector<int32_t>& ranks) {
  // "1, 4-6, 9": runs of consecutive ranks folded.
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

// Duplicate global ranks and ranks of the world that have no file.
void check_ranks(const std::string& dir, const std::vector<model::RankTrace>& ranks,
                 std::vector<model::InputProblem>& problems) {
  std::map<int32_t, std::vector<const model::RankTrace*>> by_rank;
  int32_t world = -1;
  bool world_agrees = true;
  for (const auto& r : ranks) {
    if (r.info.rank >= 0) by_rank[r.info.rank].push_back(&r);
    if (r.info.world_size > 0) {
      if (world > 0 && world != r.info.world_size) world_agrees = false;
      world = std::max(world, r.info.world_size);
    }
  }
  for (const auto& [rank, owners] : by_rank) {
    if (owners.size() < 2) continue;
    std::string files;
    for (const auto* o : owners) files += (files.empty() ? "" : ", ") + o->info.source;
    problems.push_back({dir, fmt::format("rank {} claimed by {} files (all kept): {}", rank,
                                         owners.size(), files)});
  }
  if (!world_agrees) problems.push_back({dir, "ranks disagree on the world size"});
  if (world > 0) {
    std::vector<int32_t> missing;
    for (int32_t r = 0; r < world && missing.size() < 100000; ++r) {
      if (!by_rank.contains(r)) missing.push_back(r);
    }
    if (!missing.empty()) {
      problems.push_back({dir, fmt::format("world size {}, no trace file for rank(s) {}", world,
                                           rank_list(missing))});
    }
  }
}

// Copies of one process's trace (a file copied into the dir twice, a backup next to the
// original) would count every collective twice on one rank: the rank then looks like it ran
// ahead of the others and every peer looks incomplete. A process is its (job, host, pid, start
// time); of its files the most complete is kept (finished before open, then more records, then
// the shim's own file name, then the first name) and each other one is one line.
std::vector<TraceFileEntry> drop_copies(std::vector<TraceFileEntry> files,
                                        std::vector<model::InputProblem>& problems) {
  const auto identity = [](const TraceFileEntry& f) {
    const auto& p = f.header.process;
    return std::make_tuple(f.job, bounded_string(p.host, sizeof p.host), p.pid,
                           p.start_monotonic_ns, p.start_realtime_ns, p.part);
  };
  const auto finished = [](const TraceFileEntry& f) {
    return f.header.state == format::kTraceStateClosed ||
           f.header.state == format::kTraceStateSalvaged;
  };
  // The shim's own name for the file: the original rather than a copy, all else equal.
  const auto own_name = [](const TraceFileEntry& f) {
    const auto& p = f.header.process;
    return fs::path(f.path).filename() ==
           format::trace_file_name(bounded_string(p.host, sizeof p.host), p.pid, p.part);
  };
  const auto rank = [&](const TraceFileEntry& f) {
    return std::make_tuple(finished(f), f.records, own_name(f));
  };
  std::map<decltype(identity(files[0])), std::size_t> best;  // identity -> index in files
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto [it, fresh] = best.try_emplace(identity(files[i]), i);
    if (!fresh && rank(files[i]) > rank(files[it->second])) it->second = i;
  }
  std::vector<TraceFileEntry> out;
  out.reserve(best.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::size_t keep = best.at(identity(files[i]));
    if (keep == i) continue;
    const auto& p = files[i].header.process;
    problems.push_back(
        {files[i].path,
         fmt::format("skipped: a copy of {} (same process: host '{}', pid {}, same start); {} "
                     "records here, {} there",
                     files[keep].path, bounded_string(p.host, sizeof p.host), p.pid,
                     files[i].records, files[keep].records)});
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (best.at(identity(files[i])) == i) out.push_back(std::move(files[i]));
  }
  return out;
}

// The parts of one process's trace (NCCLWATCH_MAX_MB: docs/always-on.md) become one entry, its
// first part's, listing every part in order; a part missing from the sequence is one line (the
// rank is loaded from the parts that are there).
std::vector<TraceFileEntry> join_parts(std::vector<TraceFileEntry> files,
                                       std::vector<model::InputProblem>& problems) {
  const auto process = [](const TraceFileEntry& f) {
    const auto& p = f.header.process;
    return std::make_tuple(f.job, bounded_string(p.host, sizeof p.host), p.pid,
                           p.start_monotonic_ns, p.start_realtime_ns);
  };
  std::map<decltype(process(files[0])), std::vector<std::size_t>> by_process;
  for (std::size_t i = 0; i < files.size(); ++i) by_process[process(files[i])].push_back(i);
  std::vector<TraceFileEntry> out;
  out.reserve(by_process.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto& group = by_process.at(process(files[i]));
    if (group.empty()) continue;  // joined already
    std::sort(group.begin(), group.end(), [&](std::size_t a, std::size_t b) {
      return files[a].header.process.part < files[b].header.process.part;
    });
    TraceFileEntry joined = files[group[0]];
    uint32_t expected = 0;
    for (std::size_t k = 0; k < group.size(); ++k) {
      const TraceFileEntry& part = files[group[k]];
      if (part.header.process.part != expected) {
        problems.push_back(
            {part.path, fmt::format("part(s) {}-{} of this process's trace are missing; its rank "
                                    "lacks their records",
                                    expected, part.header.process.part - 1)});
      }
      expected = part.header.process.part + 1;
      if (k == 0) continue;
      joined.parts.push_back(part.path);
      joined.records += part.records;
    }
    group.clear();
    out.push_back(std::move(joined));
  }
  return out;
}

}  // namespace

JobIndex index_job(const std::string& dir, const JobLoadOptions& options) {
  JobIndex index;
  std::vector<std::string> paths;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    index.problems.push_back({dir, "cannot read directory: " + ec.message()});
    return index;
  }
  for (const auto& entry : it) {
    // Looked at without following: a symlink or FIFO (planted by someone else in a shared dir)
    // is never opened; one claiming to be a trace gets its line.
    std::error_code type_ec;
    const auto type = entry.symlink_status(type_ec).type();
    if (type == fs::file_type::regular) {
      paths.push_back(entry.path().string());
    } else if (entry.path().extension() == ".trace" && type != fs::file_type::directory) {
      index.problems.push_back(
          {entry.path().string(), type == fs::file_type::symlink
                                      ? "skipped: a symbolic link (not followed)"
                                      : "skipped: not a regular file"});
    }
  }
  std::sort(paths.begin(), paths.end());

  std::vector<Scanned> scanned(paths.size());
  parallel_for(
      paths.size(), worker_count(options.threads),
      [&](std::size_t i) { scanned[i] = scan_one(paths[i]); }, [] {},
      std::chrono::milliseconds(250));

  std::map<std::string, std::vector<TraceFileEntry>> by_job;
  for (auto& s : scanned) {
    if (s.problem) index.problems.push_back(std::move(*s.problem));
    if (s.entry) by_job[s.entry->job].push_back(std::move(*s.entry));
  }
  if (by_job.empty()) {
    index.problems.push_back({dir, "no ncclwatch trace files"});
    return index;
  }

  std::string chosen = options.job;
  if (chosen.empty()) {
    std::size_t most = 0;
    for (const auto& [job, files] : by_job) {  // ties go to the first job id in order
      if (files.size() > most) {
        most = files.size();
        chosen = job;
      }
    }
  }
  const auto describe = [&](const std::string& skip) {
    std::string out;
    for (const auto& [job, files] : by_job) {
      if (job == skip) continue;
      out += fmt::format("{}'{}' ({} files)", out.empty() ? "" : ", ", job, files.size());
    }
    return out;
  };
  const auto found = by_job.find(chosen);
  if (found == by_job.end()) {
    index.problems.push_back(
        {dir, fmt::format("no trace file of job '{}' (jobs here: {})", chosen, describe(""))});
    return index;
  }
  // Several jobs and none asked for: which one was taken is an input problem (a warning). A job
  // asked for by id is exactly what was wanted: nothing to say.
  if (by_job.size() > 1 && options.job.empty()) {
    index.problems.push_back(
        {dir, fmt::format("directory holds {} jobs; loaded '{}' ({} files, the one with the most "
                          "ranks); also here: {} -- select one with --job ID",
                          by_job.size(), chosen, found->second.size(), describe(chosen))});
  }
  index.job = chosen;
  index.files = join_parts(drop_copies(std::move(found->second), index.problems), index.problems);
  return index;
}

model::JobTrace load_job(const std::string& dir, const JobLoadOptions& options) {
  return load_indexed(dir, index_job(dir, options), options);
}

model::JobTrace load_indexed(const std::string& dir, JobIndex index, const JobLoadOptions& options,
                             std::vector<std::optional<PreloadedRank>> preloaded,
                             std::vector<PreloadedRank> extra) {
  model::JobTrace job;
  job.job = index.job;
  job.problems = std::move(index.problems);
  preloaded.resize(index.files.size());

  const std::size_t n = index.files.size();
  JobLoadProgress progress;
  for (std::size_t i = 0; i < n; ++i) {
    if (preloaded[i]) continue;
    ++progress.files_total;
    progress.records_total += index.files[i].records;
  }

  std::vector<model::RankTrace> ranks(n);
  std::vector<std::vector<model::InputProblem>> problems(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!preloaded[i]) continue;
    ranks[i] = std::move(preloaded[i]->rank);
    problems[i] = std::move(preloaded[i]->problems);
  }
  std::atomic<std::size_t> done{0};
  const auto start = std::chrono::steady_clock::now();
  parallel_for(
      n, worker_count(options.threads),
      [&](std::size_t i) {
        if (preloaded[i]) return;
        ranks[i] = load_rank_parts(index.files[i].parts, problems[i], options.keep_steps);
        if (options.on_rank) options.on_rank(index.files[i], ranks[i]);
        done.fetch_add(1, std::memory_order_relaxed);
      },
      [&] {
        const auto elapsed = std::chrono::steady_clock::now() - start;
        if (!options.progress || elapsed < options.progress_after) return;
        progress.files_done = done.load(std::memory_order_relaxed);
        progress.elapsed_s = std::chrono::duration<double>(elapsed).count();
        options.progress(progress);
      },
      options.progress_every);

  for (auto& p : problems) {
    for (auto& line : p) job.problems.push_back(std::move(line));
  }
  for (PreloadedRank& e : extra) {
    for (auto& line : e.problems) job.problems.push_back(std::move(line));
    ranks.push_back(std::move(e.rank));
  }
  // Sorted by global rank, unknown ranks last, ties by file name (stable order).
  std::sort(ranks.begin(), ranks.end(), [](const model::RankTrace& a, const model::RankTrace& b) {
    const int32_t ra = a.info.rank < 0 ? INT32_MAX : a.info.rank;
    const int32_t rb = b.info.rank < 0 ? INT32_MAX : b.info.rank;
    if (ra != rb) return ra < rb;
    return a.info.source < b.info.source;
  });
  check_ranks(dir, ranks, job.problems);
  job.ranks = std::move(ranks);
  return job;
}

}  // namespace ncclwatch::trace

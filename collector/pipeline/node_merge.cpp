#include "pipeline/node_merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "analysis/rank_digest.h"
#include "pipeline/lean_load.h"
#include "reduce/node_file.h"
#include "trace/parallel_for.h"

namespace ncclwatch::pipeline {
namespace fs = std::filesystem;
namespace {

// The node files in `dir`, by name, never through a symlink (one is a problem line).
std::vector<std::string> node_file_paths(const std::string& dir,
                                         std::vector<model::InputProblem>& problems) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!reduce::is_node_file_name(it->path().filename().string())) continue;
    std::error_code type_ec;
    const auto type = it->symlink_status(type_ec).type();
    if (type == fs::file_type::regular) {
      paths.push_back(it->path().string());
    } else {
      problems.push_back({it->path().string(), type == fs::file_type::symlink
                                                   ? "skipped: a symbolic link (not followed)"
                                                   : "skipped: not a regular file"});
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// The node file's rank still describes `entry`: the same files, process and records.
bool still_describes(const reduce::TraceIdentity& id, const trace::TraceFileEntry& entry) {
  if (id.parts.size() != entry.parts.size()) return false;
  for (std::size_t i = 0; i < id.parts.size(); ++i) {
    if (fs::path(entry.parts[i]).filename() != id.parts[i]) return false;
  }
  const auto& p = entry.header.process;
  return id.pid == p.pid && id.start_monotonic_ns == p.start_monotonic_ns &&
         id.start_realtime_ns == p.start_realtime_ns && id.records == entry.records;
}

// The job of the node files with the most ranks (ties: the first id in order).
std::string busiest_job(const std::vector<reduce::NodeFile>& files) {
  std::map<std::string, std::size_t> ranks;
  for (const reduce::NodeFile& f : files) {
    if (!f.job.empty()) ranks[f.job] += f.ranks.size();
  }
  std::string best;
  std::size_t most = 0;
  for (const auto& [job, n] : ranks) {
    if (n > most) {
      most = n;
      best = job;
    }
  }
  return best;
}

std::string names_of(const std::vector<std::string>& paths) {
  std::string out;
  for (std::size_t i = 0; i < paths.size() && i < 3; ++i)
    out += (i ? ", " : "") + fs::path(paths[i]).filename().string();
  if (paths.size() > 3) out += fmt::format(" and {} more", paths.size() - 3);
  return out;
}

}  // namespace

model::JobTrace load_traces_and_node_files(const std::string& dir,
                                           const trace::JobLoadOptions& options, bool node_files) {
  std::vector<model::InputProblem> node_problems;
  const std::vector<std::string> paths =
      node_files ? node_file_paths(dir, node_problems) : std::vector<std::string>{};
  if (paths.empty()) {
    model::JobTrace job = trace::load_job(dir, options);
    for (auto& p : node_problems) job.problems.push_back(std::move(p));
    return job;
  }
  std::vector<reduce::NodeFile> files(paths.size());
  trace::parallel_for(paths.size(), trace::worker_count(options.threads),
                      [&](std::size_t i) { files[i] = reduce::read_node_file(paths[i], dir); });

  trace::JobIndex index = trace::index_job(dir, options);
  std::string job = !options.job.empty() ? options.job : index.job;
  if (job.empty()) job = busiest_job(files);
  const bool nodes_of_job = std::any_of(files.begin(), files.end(), [&](const reduce::NodeFile& f) {
    return f.job == job && !f.ranks.empty();
  });
  if (nodes_of_job && index.files.empty()) {
    // The traces are not here (they stayed on their nodes): what the index says of their absence
    // is not a problem.
    std::erase_if(index.problems, [&](const model::InputProblem& p) {
      return p.source == dir && (p.message.starts_with("no ncclwatch trace files") ||
                                 p.message.starts_with("no trace file of job"));
    });
    index.job = job;
  }

  std::map<std::string, std::size_t> by_name;  // first part's file name -> index.files position
  for (std::size_t i = 0; i < index.files.size(); ++i)
    by_name[fs::path(index.files[i].parts.front()).filename().string()] = i;
  std::vector<std::optional<trace::PreloadedRank>> preloaded(index.files.size());
  std::vector<trace::PreloadedRank> extra;
  std::set<std::string> taken;
  std::vector<std::string> used, stale;
  std::size_t from_nodes = 0, without_trace = 0, rounded = 0;
  int64_t coarsest = 1;
  for (reduce::NodeFile& f : files) {
    if (!f.problem.empty()) node_problems.push_back({f.path, "node file: " + f.problem});
    if (f.job != job) continue;
    bool is_stale = false, any = false;
    for (reduce::NodeRank& n : f.ranks) {
      if (n.trace.parts.empty() || !taken.insert(n.trace.parts.front()).second) continue;
      const auto at = by_name.find(n.trace.parts.front());
      if (at != by_name.end() && !still_describes(n.trace, index.files[at->second])) {
        is_stale = true;
        continue;  // read from its trace
      }
      if (n.rank.digest && at != by_name.end()) {
        // Made non-const by the node file's reader: the reload is the one thing set here.
        std::const_pointer_cast<analysis::RankDigest>(n.rank.digest)->reload =
            reload_from(index.files[at->second].parts, options.keep_steps, n.rank.info.records,
                        n.rank.info.skipped);
      }
      if (n.compute_resolution_ns > 1 && n.rank.digest) {
        ++rounded;
        coarsest = std::max(coarsest, n.compute_resolution_ns);
      }
      trace::PreloadedRank rank{std::move(n.rank), std::move(n.problems)};
      if (at != by_name.end()) {
        preloaded[at->second] = std::move(rank);
      } else {
        extra.push_back(std::move(rank));
        ++without_trace;
      }
      ++from_nodes;
      any = true;
    }
    if (is_stale) stale.push_back(f.path);
    if (any) used.push_back(f.path);
  }
  for (const std::string& path : stale) {
    node_problems.push_back(
        {path,
         "node file is stale: traces of its ranks changed since `ncclwatch reduce` (those "
         "ranks were read from their traces; run it again)"});
  }

  model::JobTrace out =
      trace::load_indexed(dir, std::move(index), options, std::move(preloaded), std::move(extra));
  for (auto& p : node_problems) out.problems.push_back(std::move(p));
  if (from_nodes > 0) {
    std::string also;
    if (without_trace > 0) {
      also = fmt::format(
          "; {} of them without their trace here (their compute kernels cannot be counted again "
          "if the job's steps are not their own)",
          without_trace);
    }
    if (rounded > 0) {
      also += fmt::format(
          "; {} of them with compute times rounded to {} ns (`reduce --compute-resolution-ns`): "
          "GPU-time figures can differ from the traces' by about that much a kernel",
          rounded, coarsest);
    }
    out.notes.push_back({dir, fmt::format("{} of {} rank(s) read from node files ({}){}",
                                          from_nodes, out.ranks.size(), names_of(used), also)});
  }
  return out;
}

}  // namespace ncclwatch::pipeline

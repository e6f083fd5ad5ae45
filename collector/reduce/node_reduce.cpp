#include "reduce/node_reduce.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "analysis/rank_digest.h"
#include "ncclwatch/names.h"
#include "reduce/node_file.h"
#include "reduce/node_file_writer.h"
#include "reduce/rank_codec.h"
#include "timeline/gpu_linker.h"
#include "trace/job_loader.h"
#include "trace/parallel_for.h"
#include "trace/rank_loader.h"
#include "trace/trace_dir.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::reduce {
namespace fs = std::filesystem;
namespace {

std::string host_of(const trace::TraceFileEntry& e) {
  return trace::bounded_string(e.header.process.host, sizeof e.header.process.host);
}

uint64_t file_bytes(const std::vector<std::string>& parts) {
  uint64_t total = 0;
  for (const std::string& p : parts) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

// One rank: read, linked, digested and dropped, encoded. Empty when its records are cut by
// capture windows (left to its trace). Compressed here: ranks are reduced in parallel.
std::string reduce_rank(const std::string& dir, const trace::TraceFileEntry& file,
                        int64_t compute_resolution_ns, uint64_t& records) {
  NodeRank node;
  node.compute_resolution_ns = compute_resolution_ns;
  node.rank = trace::load_rank_parts(file.parts, node.problems);
  records = node.rank.info.records;
  if (!analysis::records_are_one_whole_run(node.rank)) return {};
  timeline::link_recorded_gpu_work(node.rank);
  analysis::digest_and_drop(node.rank, nullptr);
  for (const std::string& p : file.parts)
    node.trace.parts.push_back(fs::path(p).filename().string());
  node.trace.pid = file.header.process.pid;
  node.trace.start_monotonic_ns = file.header.process.start_monotonic_ns;
  node.trace.start_realtime_ns = file.header.process.start_realtime_ns;
  node.trace.records = file.records;
  return compress_section(encode_rank(node, dir));
}

ReducedNode reduce_host(const std::string& dir, const trace::TraceDir& out, const std::string& job,
                        const std::string& host, const std::vector<trace::TraceFileEntry>& files,
                        const ReduceOptions& options, std::string& error) {
  ReducedNode node;
  node.host = host;
  std::vector<std::string> encoded(files.size());
  std::vector<uint64_t> records(files.size());
  trace::parallel_for(
      files.size(), trace::worker_count(options.threads),
      [&](std::size_t i) {
        encoded[i] = reduce_rank(dir, files[i], options.compute_resolution_ns, records[i]);
      },
      [] {}, std::chrono::milliseconds(250));
  const std::string name = node_file_name(host, job);
  NodeFileWriter writer;
  bool any = false;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (encoded[i].empty()) {
      node.left_to_traces.push_back(files[i].path);
      continue;
    }
    if (!any && !writer.begin(out, name, job, host, error)) return node;
    any = true;
    if (!writer.add_section(encoded[i], error)) return node;
    std::string().swap(encoded[i]);
    ++node.ranks;
    node.records += records[i];
    node.trace_bytes += file_bytes(files[i].parts);
  }
  if (!any) return node;  // every rank has capture windows
  if (!writer.finish(error)) return node;
  node.path = fmt::format("{}/{}", out.path(), name);
  node.node_bytes = writer.bytes();
  return node;
}

// The directory's index of `job` ("": the job with the most ranks).
trace::JobIndex index_of(const std::string& dir, const std::string& job) {
  trace::JobLoadOptions load;
  load.job = job;
  return trace::index_job(dir, load);
}

}  // namespace

std::string this_host() {
  // The shim's rule (shim/record/settings.cpp): NCCLWATCH_HOST, else gethostname, sanitized.
  std::string host;
  if (const char* h = std::getenv("NCCLWATCH_HOST"); h != nullptr) host = h;
  if (host.empty()) {
    char buf[256] = {};
    host = ::gethostname(buf, sizeof buf - 1) == 0 && buf[0] != '\0' ? buf : "unknown-host";
  }
  return format::sanitize_name(host);
}

HostInJob host_in_job(const std::string& dir, const std::string& job, const std::string& host) {
  return host_in_job(index_of(dir, job), host);
}

HostInJob host_in_job(const trace::JobIndex& index, const std::string& host) {
  HostInJob out;
  int64_t elsewhere = 0, world = 0;
  for (const trace::TraceFileEntry& e : index.files) {
    world = std::max<int64_t>(world, e.header.process.world_size);
    if (host_of(e) != host) {
      ++elsewhere;
      continue;
    }
    ++out.ranks;
    // A part's header says open while its process writes it (or until it is salvaged).
    if (e.header.state != format::kTraceStateClosed &&
        e.header.state != format::kTraceStateSalvaged)
      ++out.running;
  }
  out.spans_hosts = out.ranks > 0 && (elsewhere > 0 || world > static_cast<int64_t>(out.ranks));
  return out;
}

ReduceResult reduce_directory(const std::string& dir, const ReduceOptions& options) {
  return reduce_index(dir, index_of(dir, options.job), options);
}

ReduceResult reduce_index(const std::string& dir, trace::JobIndex index,
                          const ReduceOptions& options) {
  ReduceResult result;
  result.job = index.job;
  result.problems = std::move(index.problems);
  if (index.files.empty()) {
    result.error = options.job.empty()
                       ? fmt::format("no rank traces in {}", dir)
                       : fmt::format("no rank traces of job {} in {}", options.job, dir);
    return result;
  }
  std::map<std::string, std::vector<trace::TraceFileEntry>> by_host;
  for (trace::TraceFileEntry& e : index.files) by_host[host_of(e)].push_back(std::move(e));
  if (!options.all_hosts && !by_host.contains(options.host)) {
    std::string hosts;
    for (const auto& [h, files] : by_host)
      hosts += fmt::format("{}{} ({} ranks)", hosts.empty() ? "" : ", ", h, files.size());
    result.error = fmt::format(
        "no rank trace of host '{}' in {} (hosts there: {}): give --host NAME, or --all-hosts",
        options.host, dir, hosts);
    return result;
  }
  std::error_code ec;
  const fs::path absolute = fs::absolute(dir, ec);
  trace::TraceDir out;
  std::string path = absolute.lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (ec || !out.open(path)) {
    result.error = fmt::format("cannot write into {}: {}", dir, ec ? ec.message() : out.error());
    return result;
  }
  for (const auto& [host, files] : by_host) {
    if (!options.all_hosts && host != options.host) continue;
    std::string error;
    ReducedNode node = reduce_host(dir, out, result.job, host, files, options, error);
    if (!error.empty()) {
      result.error = error;
      return result;
    }
    result.nodes.push_back(std::move(node));
  }
  return result;
}

}  // namespace ncclwatch::reduce

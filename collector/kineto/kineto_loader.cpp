#include "kineto/kineto_loader.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "kernels/kernel_calls.h"
#include "kineto/byte_source.h"
#include "kineto/event_splitter.h"
#include "kineto/rank_builder.h"
#include "kineto/trace_event.h"
#include "trace/parallel_for.h"

namespace ncclwatch::kineto {
namespace {

static_assert(kSplitterPadding >= simdjson::SIMDJSON_PADDING);

constexpr std::size_t kChunkBytes = 4 << 20;

// Feeds split events to the parser and the builder; remembers the first bad event.
class BuildingSink : public EventSplitter::Sink {
 public:
  explicit BuildingSink(RankTraceBuilder& builder) : builder_(builder) {}
  void on_event(std::string_view json) override {
    ++index_;
    if (!parser_.parse(json, event_)) {
      if (bad_ == 0) first_bad_ = fmt::format("event #{}: {}", index_, parser_.error());
      ++bad_;
      return;
    }
    builder_.add(event_);
  }
  void on_top_level(std::string_view key, std::string_view json) override {
    if (key == "distributedInfo") builder_.set_distributed_info(json);
    if (key == "deviceProperties") builder_.set_device_properties(json);
  }
  uint64_t bad() const { return bad_; }
  const std::string& first_bad() const { return first_bad_; }

 private:
  RankTraceBuilder& builder_;
  TraceEventParser parser_;
  TraceEvent event_;
  uint64_t index_ = 0;
  uint64_t bad_ = 0;
  std::string first_bad_;
};

bool is_trace_file(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  auto ends = [&name](std::string_view s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

// PyTorch before 1.10 writes no distributedInfo (and no record_param_comms "Rank" arg): such a
// file's rank is the lowest number no other file claims, in the order the files were given
// (a directory's sorted by name), and the report says so. The job's size is then the number of
// files when no file states it.
void number_unknown_ranks(model::JobTrace& job) {
  std::set<int32_t> taken;
  std::vector<model::RankTrace*> unknown;
  int32_t world = -1;
  for (auto& r : job.ranks) {
    if (r.info.rank >= 0)
      taken.insert(r.info.rank);
    else
      unknown.push_back(&r);
    world = std::max(world, r.info.world_size);
  }
  if (unknown.empty()) return;
  std::string list;
  int32_t next = 0;
  for (std::size_t i = 0; i < unknown.size(); ++i) {
    while (taken.count(next)) ++next;
    model::RankTrace& r = *unknown[i];
    r.info.rank = next++;
    // Its comms without a process group (unnamed, or the order lanes of rank_builder.cpp) are
    // the world's: its place in them is its rank.
    for (auto& c : r.comms)
      if (c.rank < 0 && (c.name.empty() || c.name.rfind("(no process group)", 0) == 0))
        c.rank = r.info.rank;
    if (i < 8) list += fmt::format("{}{} = rank {}", i ? ", " : "", r.info.source, r.info.rank);
  }
  if (unknown.size() > 8) list += fmt::format(" and {} more", unknown.size() - 8);
  const auto n = static_cast<int32_t>(job.ranks.size());
  for (auto& r : job.ranks) {
    if (r.info.world_size < 0) r.info.world_size = world > 0 ? world : n;
    for (auto& c : r.comms)
      if (c.nranks <= 0) c.nranks = r.info.world_size;
  }
  job.notes.push_back(
      {"Kineto traces",
       fmt::format("no rank recorded in {} of them (no distributedInfo: PyTorch before "
                   "1.10): ranks numbered in the order of the files: {}",
                   unknown.size(), list)});
}

}  // namespace

std::optional<model::RankTrace> load_rank(const std::string& path,
                                          std::vector<model::InputProblem>& problems,
                                          const LoadLimits& limits) {
  auto problem = [&](std::string message) { problems.push_back({path, std::move(message)}); };
  ByteSource source(path);
  if (!source.ok()) {
    problem(source.error());
    return std::nullopt;
  }
  if (source.gzip() && limits.max_inflate_ratio != 0) {
    const uint64_t by_ratio = source.file_bytes() > UINT64_MAX / limits.max_inflate_ratio
                                  ? UINT64_MAX
                                  : source.file_bytes() * limits.max_inflate_ratio;
    source.limit_inflated(std::max(by_ratio, limits.min_inflated_bytes));
  }
  RankTraceBuilder builder(path);
  BuildingSink sink(builder);
  EventSplitter splitter(sink, {"distributedInfo", "deviceProperties"}, limits.max_event_bytes);
  std::vector<char> chunk(kChunkBytes + kSplitterPadding, ' ');
  while (!splitter.failed()) {
    const std::size_t n = source.read(chunk.data(), kChunkBytes);
    if (n == 0) break;
    splitter.feed(chunk.data(), n);
  }
  splitter.finish();
  if (splitter.failed()) {
    // A gzip that breaks off mid-stream usually makes the JSON look broken too: name the cause.
    problem(!source.ok() ? fmt::format("{} ({})", source.error(), splitter.error())
                         : splitter.error());
    return std::nullopt;
  }
  const bool truncated = !source.ok() || !splitter.complete();
  if (builder.gpu_events() == 0 && builder.comm_ops() == 0) {
    problem(truncated ? fmt::format("{}; no GPU events before the cut",
                                    source.ok() ? "truncated JSON" : source.error())
                      : "no GPU events (no kernel, gpu_memcpy or gpu_memset); is it a GPU trace?");
    return std::nullopt;
  }
  model::RankTrace trace = builder.finish();
  trace.info.complete = !truncated;
  trace.info.skipped = sink.bad() + builder.bad_times();
  if (truncated) {
    problem(
        fmt::format("{} after {} events; kept the {} GPU events and {} collectives before the cut",
                    source.ok() ? "truncated JSON" : source.error(), splitter.events(),
                    trace.kernels.size(), trace.calls.size()));
  } else if (trace.kernels.empty()) {
    problem(
        fmt::format("no GPU events; {} collectives kept with host times only", trace.calls.size()));
  }
  if (builder.bad_times() > 0) {
    problem(fmt::format("{} events with unusable times skipped (first: {})", builder.bad_times(),
                        builder.first_bad_time()));
  }
  if (sink.bad() > 0) {
    problem(fmt::format("{} malformed events skipped (first: {})", sink.bad(), sink.first_bad()));
  }
  return trace;
}

model::JobTrace load_job(const std::vector<std::string>& paths_or_dirs, const LoadLimits& limits) {
  model::JobTrace job;
  std::vector<model::InputProblem>& problems = job.problems;
  std::vector<std::string> files;
  std::vector<model::InputProblem> dir_problems;
  for (const auto& p : paths_or_dirs) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::directory_iterator(p, ec)) {
        if (entry.is_regular_file(ec) && is_trace_file(entry.path()))
          found.push_back(entry.path().string());
      }
      if (ec) dir_problems.push_back({p, "cannot list directory: " + ec.message()});
      if (found.empty() && !ec)
        dir_problems.push_back({p, "no .json or .json.gz files in this directory"});
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(p);
    }
  }

  // One thread per file, up to the number of cores: files are independent. A worker's exception
  // (out of memory) comes back here, after every thread has been joined.
  std::vector<std::optional<model::RankTrace>> traces(files.size());
  std::vector<std::vector<model::InputProblem>> file_problems(files.size());
  trace::parallel_for(files.size(), trace::worker_count(), [&](std::size_t i) {
    traces[i] = load_rank(files[i], file_problems[i], limits);
  });

  for (auto& p : dir_problems) problems.push_back(std::move(p));
  std::map<int32_t, std::string> seen;  // global rank -> file
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (auto& p : file_problems[i]) problems.push_back(std::move(p));
    if (!traces[i]) continue;
    const int32_t rank = traces[i]->info.rank;
    if (rank >= 0) {
      auto [it, fresh] = seen.emplace(rank, files[i]);
      if (!fresh) {
        problems.push_back(
            {files[i], fmt::format("rank {} already read from {}; skipped (one rank per "
                                   "file, one job per report)",
                                   rank, it->second)});
        continue;
      }
    }
    job.ranks.push_back(std::move(*traces[i]));
  }
  number_unknown_ranks(job);
  std::stable_sort(job.ranks.begin(), job.ranks.end(), [](const auto& a, const auto& b) {
    const auto key = [](const model::RankTrace& t) {
      return t.info.rank < 0 ? INT64_MAX : static_cast<int64_t>(t.info.rank);
    };
    return key(a) < key(b);
  });
  kernels::align_kernel_comms(job, job.notes);
  return job;
}

}  // namespace ncclwatch::kineto

#include "trace/rank_loader.h"

#include <memory>

#include "trace/rank_builder.h"
#include "trace/trace_file_reader.h"

namespace ncclwatch::trace {

model::RankTrace load_rank(const std::string& path, std::vector<model::InputProblem>& problems,
                           bool keep_steps) {
  TraceFileReader reader;
  if (!reader.open(path)) {
    problems.push_back({path, reader.error()});
    model::RankTrace empty;
    empty.info.source = path;
    empty.info.complete = false;
    return empty;
  }
  // Two passes over the file: the first counts records per kind so the model's vectors are
  // allocated once at their final size (growth by doubling would cost up to 3x at the peak);
  // the second converts. The second pass reads from the page cache.
  KindCounts counts;
  for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next()) counts.add(chunk);
  reader.rewind();

  RankBuilder builder(reader.header(), path);
  builder.keep_steps(keep_steps);
  builder.reserve(counts);
  for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next()) builder.add(chunk);

  for (const auto& warning : reader.warnings()) problems.push_back({path, warning});
  model::RankTrace trace = builder.finish(problems);
  if (reader.torn_tail() || reader.record_count() < reader.header().records)
    trace.info.complete = false;
  if (trace.info.records == 0) problems.push_back({path, "no records"});
  return trace;
}

model::RankTrace load_rank_parts(const std::vector<std::string>& paths,
                                 std::vector<model::InputProblem>& problems, bool keep_steps) {
  if (paths.size() == 1) return load_rank(paths[0], problems, keep_steps);
  std::vector<std::unique_ptr<TraceFileReader>> readers;
  for (const std::string& path : paths) {
    auto reader = std::make_unique<TraceFileReader>();
    if (!reader->open(path)) {
      problems.push_back({path, reader->error()});
      continue;
    }
    readers.push_back(std::move(reader));
  }
  if (readers.empty()) {
    model::RankTrace empty;
    empty.info.source = paths.empty() ? std::string() : paths[0];
    empty.info.complete = false;
    return empty;
  }
  KindCounts counts;
  for (auto& reader : readers) {
    for (auto chunk = reader->next(); !chunk.empty(); chunk = reader->next()) counts.add(chunk);
    reader->rewind();
  }
  RankBuilder builder(readers.back()->header(), readers.front()->path());
  builder.keep_steps(keep_steps);
  builder.reserve(counts);
  bool complete = readers.size() == paths.size();
  for (auto& reader : readers) {
    for (auto chunk = reader->next(); !chunk.empty(); chunk = reader->next()) builder.add(chunk);
    for (const auto& warning : reader->warnings()) problems.push_back({reader->path(), warning});
    if (reader->torn_tail() || reader->record_count() < reader->header().records) complete = false;
  }
  model::RankTrace trace = builder.finish(problems);
  if (!complete) trace.info.complete = false;
  if (trace.info.records == 0) problems.push_back({paths[0], "no records"});
  return trace;
}

}  // namespace ncclwatch::trace

#include "trace/rank_loader.h"

#include "trace/rank_builder.h"
#include "trace/trace_file_reader.h"

namespace ncclwatch::trace {

model::RankTrace load_rank(const std::string& path, std::vector<model::InputProblem>& problems) {
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
  builder.reserve(counts);
  for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next()) builder.add(chunk);

  for (const auto& warning : reader.warnings()) problems.push_back({path, warning});
  model::RankTrace trace = builder.finish(problems);
  if (reader.torn_tail() || reader.record_count() < reader.header().records)
    trace.info.complete = false;
  if (trace.info.records == 0) problems.push_back({path, "no records"});
  return trace;
}

}  // namespace ncclwatch::trace

#include "pipeline/lean_load.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/rank_digest.h"
#include "timeline/gpu_linker.h"
#include "trace/rank_loader.h"

namespace ncclwatch::pipeline {

ReloadRank reload_from(const std::vector<std::string>& parts, bool keep_steps, uint64_t records,
                       uint64_t skipped) {
  // The same files read again, checked to be what was read the first time: a live job's trace
  // grows (or a neighbour replaces it) between the two reads.
  return
      [parts, keep_steps, records, skipped](std::string& why) -> std::optional<model::RankTrace> {
        std::vector<model::InputProblem> problems;
        model::RankTrace again = trace::load_rank_parts(parts, problems, keep_steps);
        if (again.info.records != records || again.info.skipped != skipped) {
          why = fmt::format("its trace changed while the report read it ({} records, then {})",
                            records, again.info.records);
          return std::nullopt;
        }
        timeline::link_recorded_gpu_work(again);
        return again;
      };
}

void digest_rank(const trace::TraceFileEntry& file, model::RankTrace& rank, bool keep_steps) {
  if (!analysis::records_are_one_whole_run(rank)) return;
  timeline::link_recorded_gpu_work(rank);
  analysis::digest_and_drop(
      rank, reload_from(file.parts, keep_steps, rank.info.records, rank.info.skipped));
}

bool any_digested_in_windows(const model::JobTrace& job,
                             const std::vector<history::CaptureWindow>& windows) {
  for (const history::CaptureWindow& w : windows) {
    for (const history::CaptureWindow::Span& s : w.spans) {
      if (s.rank < job.ranks.size() && job.ranks[s.rank].digest) return true;
    }
  }
  return false;
}

}  // namespace ncclwatch::pipeline

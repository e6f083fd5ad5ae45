// `report`'s load of ncclwatch traces: as each rank is read, its GPU records (kernels, memcpy,
// launches, kernel links, CUDA-event intervals) are linked to their calls, digested for the
// analyses (analysis/rank_digest.h) and for the collector's checks (model/dropped_gpu_records.h),
// and dropped. The job in memory then holds the calls and the small records: a full-mode trace is
// ~95 % GPU records (issue 24; tests/bench/scale measures it). The report is the same, byte for
// byte (tests/collector/pipeline/lean_load_test.cpp).
//
// Only where nothing later needs the records themselves: not with a --trace export, and only for a
// rank whose records are one whole run (no capture window, or a whole-run one): a windowed run's
// report cuts each window out of the records (report_windows), and reads the job again whole when
// a window holds a digested rank (which the rule above rules out).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "history/capture_windows.h"
#include "model/job_trace.h"
#include "trace/job_loader.h"

namespace ncclwatch::pipeline {

// RankDigest::reload: the rank read again from `parts` and linked, if it still has `records`
// records of which `skipped` were rejected (the file is still the one digested).
using ReloadRank = std::function<std::optional<model::RankTrace>(std::string& why)>;
ReloadRank reload_from(const std::vector<std::string>& parts, bool keep_steps, uint64_t records,
                       uint64_t skipped);

// JobLoadOptions::on_rank. `keep_steps` as the load had it (a reload reads the rank the same).
void digest_rank(const trace::TraceFileEntry& file, model::RankTrace& rank, bool keep_steps);

// Some rank of one of `windows` had its GPU records dropped.
bool any_digested_in_windows(const model::JobTrace& job,
                             const std::vector<history::CaptureWindow>& windows);

}  // namespace ncclwatch::pipeline

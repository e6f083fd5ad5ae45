// What `ncclwatch diff` compares of one run, read from its report JSON (docs/report-schema.md)
// as untrusted input: every key is optional and type-checked; what is missing is left empty
// and said once in `notes` ("BASE has no bus_bandwidth table (an older ncclwatch?): ..."), so a
// baseline written by an older version still diffs what it has.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff/figure.h"

namespace ncclwatch::diff {

// The parts of a step, in the order the breakdown adds them up (GPU basis), then the host-side
// split (host basis). Keys are the breakdown's JSON keys.
struct StepPart {
  const char* key;    // "compute_us"
  const char* label;  // "compute"
};
inline constexpr StepPart kGpuParts[] = {
    {"compute_us", "compute"},
    {"exposed_wait_us", "exposed comm: waiting for a late peer"},
    {"exposed_transfer_us", "exposed comm: transfer"},
    {"memcpy_us", "memcpy/memset"},
    {"idle_step_boundary_us", "idle at the step boundary"},
    {"idle_before_comm_us", "idle before collectives"},
    {"idle_other_us", "idle between kernels"},
};
inline constexpr StepPart kHostParts[] = {
    {"host_in_nccl_us", "host: inside NCCL calls"},
    {"host_between_us", "host: between NCCL calls"},
};

struct RankFigures {
  int rank = -1;
  std::string host;
  double step_us = 0, compute_us = 0;
  double compute_spread_us = 0;  // from its per_step entries
  bool gpu = false;
};

struct BucketFigures {
  std::size_t ordinal = 0;  // 1-based in the step
  double bytes = 0;
  Figure overlap_pct, exposed_us;
  double occurrences = 0;
};

struct BusbwFigures {
  std::string op, scope;  // "all_reduce", "cross-node"
  double size_min = 0, size_max = 0;
  double calls = 0;
  double mean_bytes = 0;  // 0 in reports that did not write it
  bool latency_bound = false;
  Figure busbw_gbs;
};

// A finding's cost in the findings' one unit (docs/verdicts.md, "Figures"): the share of the
// job's rank-time it takes (`cost_pct`) and the same share as time per step
// (`cost_us_per_step` = cost_pct / 100 x the mean steady step).
struct FindingCost {
  double pct = 0;
  double us_per_step = 0;
};

struct StragglerFigures {
  int rank = -1;
  std::string host, cause, pattern, severity;
  double lateness_us = 0;
  FindingCost cost;
};

struct SlowLinkFigures {
  std::string host, severity;
  double slowdown = 0;
  FindingCost cost;
};

struct KernelFigures {
  std::string name;
  bool nccl = false;
  Figure us_per_step;
  double calls_per_step = 0;
};

struct RunSummary {
  std::string side;  // "BASE" or "NEW": how notes name it
  std::string job;
  int schema_version = 0;
  std::size_t ranks = 0, hosts = 0;
  std::string basis;      // "gpu", "host", "" (no breakdown)
  std::size_t steps = 0;  // steady steps in the series
  std::size_t step_ranks = 0;
  std::map<std::string, Figure> parts;  // "step_us" and the parts of the basis
  bool parts_estimated = false;         // from breakdown[].per_step (report without `steady`)
  std::vector<RankFigures> rank_rows;
  std::vector<BucketFigures> buckets;
  bool has_buckets = false;
  std::vector<BusbwFigures> busbw;
  bool has_busbw = false;
  std::vector<StragglerFigures> stragglers;
  std::vector<SlowLinkFigures> slow_links;
  std::string pattern_row, pattern_text;
  std::vector<KernelFigures> kernels;
  bool has_kernels = false;
  bool kernels_complete = false;  // every distinct kernel is listed (absent = not run)
  double compute_kernels_us = 0;  // kernels_analysis.compute_us_per_step
  // Environment as recorded: label -> value ("NCCL version" -> "2.21.5"); ordered for print.
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<std::string> notes;

  double step_us() const;
  const Figure* part(const std::string& key) const;

  static RunSummary of(const nlohmann::json& report, const std::string& side);
};

}  // namespace ncclwatch::diff

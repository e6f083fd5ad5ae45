// Simulated jobs with randomized ground truth for the straggler verdicts, and their scoring:
// the generator behind the verdict matrix (tests/bench/analysis/verdict_matrix.cpp) and its
// deterministic subset (verdict_matrix_test.cpp).
//
// A scenario = a kind (what is wrong, on which randomly chosen rank or node, how much), a noise
// level (delays on every rank that make nobody a straggler), GPU-timed or host-only, a job size.
// Magnitudes are drawn relative to the nominal step T so that every kind stays detectable at
// noise up to 10% of T: slow GPU x1.3-1.6 compute (lateness ≈ 13-26% of T), host stall
// 15-40% of T, periodic stall 40-80% of T every 3-8 steps (next to a persistent straggler:
// 20-60% of T).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddp_sim.h"
#include "model/report.h"

namespace ncclwatch::analysis::testing {

enum class Kind : uint8_t {
  kClean,
  kSlowGpu,
  kHostStall,
  kSlowNode,
  kPeriodic,
  kTwoStragglers,
  kSlowLink,  // one node's NIC slows the cross-node transfers of its comms (pair-links layout)
  // A persistent straggler (slow GPU or host stall) and another rank stalling every Nth step:
  // the periodic one must not hide behind the persistent one's lateness.
  kPersistentPeriodic,
};
inline constexpr Kind kAllKinds[] = {
    Kind::kClean,    Kind::kSlowGpu,       Kind::kHostStall, Kind::kSlowNode,
    Kind::kPeriodic, Kind::kTwoStragglers, Kind::kSlowLink,  Kind::kPersistentPeriodic};
const char* to_string(Kind k);

// One expected straggler entry of the JSON report.
struct Expected {
  int32_t rank = -1;
  std::string pattern;  // persistent | periodic
  std::size_t period = 0;
  std::string cause;  // gpu-slow | host-stall | unknown (host-only records)
  bool node_problem = false;
};

struct ScenarioSpec {
  Kind kind = Kind::kClean;
  Noise noise = Noise::kNone;
  double noise_frac = 0;
  bool host_only = false;
  int ranks = 8;
  int per_host = 2;
  int steps = 30;
  uint64_t seed = 1;
};

struct Scenario {
  ScenarioSpec spec;
  SimParams params;
  std::vector<Expected> truth;
  // kSlowLink: the node with the slow NIC (expected in slow_links[] when GPU-timed), and the
  // ranks whose collectives cross it (they may be late; see score()).
  std::string link_host;
  std::vector<int32_t> link_ranks;
  std::string description;  // "rank 5 host stall 3.1 ms", for failure messages
};

Scenario make_scenario(const ScenarioSpec& spec);

// The job of one cell of the verdict matrix as the load tests take it: 8 ranks, 2 a host, 10 %
// of `noise` where there is any.
SimJob matrix_job(Kind kind, Noise noise, bool host_only, uint64_t seed);

// Everything a report says (JSON, sections, findings) in one string: two reports compared whole.
std::string everything(const model::Report& r);

struct Score {
  uint64_t true_positives = 0;   // report entries matching an expected one exactly
  uint64_t false_positives = 0;  // report entries matching none (false or wrong verdict)
  uint64_t false_negatives = 0;  // expected entries not reported exactly
  bool exact() const { return false_positives == 0 && false_negatives == 0; }
  std::string detail;  // what differed
};

// Scores the JSON report's stragglers[] and slow_links[] against the scenario's truth. A
// straggler entry is right when rank, pattern, period (periodic), cause and node_problem all
// match. A slow link is right when it names the slow node alone and blames only ranks whose
// collectives cross it. Slow link, GPU-timed: expected = the link, no straggler. Slow link,
// host-only: call entries show who is late but not why, so nothing is expected (no recall to
// score); the ranks behind the link may be reported as stragglers of cause unknown (true:
// they are late, and the report says GPU timing is needed), any other entry is false.
Score score(const Scenario& s, const nlohmann::json& report);

}  // namespace ncclwatch::analysis::testing

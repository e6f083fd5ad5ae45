// Where a rank's training steps start, learned by the drain thread from the collectives on its
// reference comm (the comm with the most ranks), much as collector/analysis/step_plan.h finds
// them after the run, with the same gap rules (ncclwatch/step_gaps.h: robust statistics that hold
// on a busy machine, where ranks must not disagree on the step): DDP, FSDP and friends
// issue the same collectives (op, size) every step, so the sequence repeats with a period of a
// whole number of steps; when every collective looks the same (equal buckets), the gaps between
// their entries say which one starts a step (the forward pass leaves a wide gap before the first
// bucket). Steps are then counted by sequence number (seq), which every rank of the comm shares:
// step n starts at the collective with seq phase + n x period, on every rank alike
// (docs/always-on.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ncclwatch/step_gaps.h"

namespace ncclwatch::shim {

struct StepPattern {
  uint32_t period = 0;       // collectives on the reference comm per step
  uint32_t phase = 0;        // steps start at seq % period == phase
  uint64_t start_token = 0;  // signature (op, count, type) of a step's first collective
};

class StepLearner {
 public:
  // One collective of the reference comm; `token` says what it was (same op, size, type: same
  // token).
  struct Call {
    uint32_t seq;
    int64_t enter_ns;
    uint64_t token;
  };
  enum class State { kLearning, kLearned, kFailed };

  // Calls looked at before giving up (no repeating pattern: steps then come from the clock).
  static constexpr std::size_t kMaxCalls = 3072;
  // Equal collectives whose gaps neither show a step nor are flat (a busy machine hides the
  // step): the newest kMaxCalls calls are looked at again every kMaxCalls / 4 calls, up to this
  // many calls in all; then steps come from the clock for good. Meanwhile, from kMaxCalls calls
  // (or a time) on, the summarizer counts seconds of the clock and switches when this learns
  // (step_summarizer.h, Options::clock_fallback_ns).
  static constexpr std::size_t kMaxUnclearCalls = 8 * kMaxCalls;

  // Gaps at each phase of twice a candidate step before the gaps may decide it: a busy machine
  // (CPU contention) adds random gaps of milliseconds to a sizeable fraction of the calls, and
  // with fewer gaps per phase a phase that mixes wide and narrow gaps (half the true step) can
  // look wide throughout by chance. 16 per half-phase: 4 equal buckets per step are decided at
  // 192 calls, 64 at 3072. 2 suffice where the gaps split cleanly (step_gaps::clean_gap_period:
  // every gap at one phase 2x every other gap, and alike: a quiet machine's 16-step job of 4
  // buckets has its steps at 24 calls, while it runs, so that its schedule windows -- steps 3-5
  // -- are the steps they name), and 4 at the end of a run (conclude): a short job (the scenario
  // tests' 12 steps of 4 buckets) has its steps rather than seconds, at the risk of a wrong step
  // when a busy machine's noise was heavy for all of its few calls.
  static constexpr std::size_t kGapsPerHalfPhase = 16;
  static constexpr std::size_t kCleanGapsPerHalfPhase = 2;
  static constexpr std::size_t kGapsPerHalfPhaseAtEnd = 4;
  // Every call alike (token period 1) is one collective per step only when the gaps show no
  // larger step at any candidate up to kMaxMultiple calls, with this many gaps per phase: taken
  // at 768 calls, never earlier, so that no rank takes period 1 while another, whose noise hid
  // the step less, finds the true one.
  static constexpr std::size_t kFlatGapsPerPhase = 8;
  static constexpr std::size_t kMaxMultiple = step_gaps::kMaxMultiple;

  // Adds the next collective; tries to learn at 24, 48, 96, ..., kMaxCalls calls (then every
  // kMaxCalls / 4 while the gaps are unclear). Returns state().
  State add(const Call& call);
  // The run ends while learning: decides with fewer gaps per phase; a token period of 1 is taken
  // if the gaps there are show no step (a short job of one collective per step). Returns state().
  State conclude();
  // Takes a pattern another rank of the comm learned (ncclwatch/job_steps.h) instead of learning
  // on (kLearning), or instead of the clock (kFailed): true, and state() kLearned, unless this
  // rank's own calls contradict it -- more than 3% of those held at its phase (the first quarter,
  // warm-up, left out) are not its start collective. NCCL makes every rank of a comm issue the
  // same collectives in the same order, so a pattern of the comm holds on each of its ranks; the
  // check guards against a notice that is not this job's.
  bool adopt(const StepPattern& pattern);
  // The pattern was taken from another rank (adopt) rather than learned here.
  bool adopted() const { return adopted_; }
  State state() const { return state_; }
  const StepPattern& pattern() const { return pattern_; }
  std::size_t calls() const { return calls_.size(); }
  // Calls added since the last reset (calls() stops growing at kMaxCalls).
  std::size_t seen() const { return seen_; }
  void reset();

  // Exposed for tests. The smallest period p of tokens[from..] (repeats for >= 97% of the
  // positions, at least three times over), 0 if none.
  static std::size_t token_period(const std::vector<uint64_t>& tokens, std::size_t from);
  // The step period among multiples of `p` (up to kMaxMultiple) that the gaps before calls
  // explain (step_gaps::gap_period): exactly one multiple P has one phase whose gaps are wide
  // throughout (in both halves of it at 2P) while most gaps at each other phase are narrow; false
  // if none or more than one does. Gaps are looked at from index `from` (>= 1: gaps[0] has no call
  // before it); `phase` is relative to `from`; `per_half_phase`: kGapsPerHalfPhase or
  // kGapsPerHalfPhaseAtEnd.
  static bool gap_period(const std::vector<int64_t>& gaps, std::size_t from, std::size_t p,
                         std::size_t per_half_phase, std::size_t& period, std::size_t& phase);
  // True when the gaps from `from` on show no step of 2..max_period calls: at each such period,
  // the lower quartiles of the gaps at its phases are within 1.2x of each other. False
  // also when there are fewer than `per_phase` gaps per phase for any of those periods.
  static bool gaps_flat(const std::vector<int64_t>& gaps, std::size_t from, std::size_t max_period,
                        std::size_t per_phase);

 private:
  bool learn(bool at_end);

  std::vector<Call> calls_;
  std::size_t next_try_ = 24;
  std::size_t seen_ = 0;       // calls added since the last reset
  bool gaps_unclear_ = false;  // the last try: equal collectives, gaps neither flat nor clear
  bool adopted_ = false;
  State state_ = State::kLearning;
  StepPattern pattern_;
};

}  // namespace ncclwatch::shim

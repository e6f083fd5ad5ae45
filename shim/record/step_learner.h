// Where a rank's training steps start, learned by the drain thread from the collectives on its
// reference comm (the comm with the most ranks), the way collector/analysis/step_plan.h finds
// them after the run: DDP, FSDP and friends issue the same collectives (op, size) every step, so
// the sequence repeats with a period of a whole number of steps; when every collective looks the
// same (equal buckets), the gaps between their entries say which one starts a step (the forward
// pass leaves a wide gap before the first bucket). Steps are then counted by sequence number
// (seq), which every rank of the comm shares: step n starts at the collective with seq
// phase + n x period, on every rank alike (docs/always-on.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

  // Below this many calls, a token period of 1 (every call alike: equal buckets) whose gaps show
  // no step is not taken yet: on a busy machine a few preempted gaps in the first steps hide the
  // wide gap before each step's first bucket, and period 1 would make every bucket a step.
  static constexpr std::size_t kConfirmCalls = 96;

  // Adds the next collective; tries to learn at 24, 48, 96, ... calls. Returns state().
  State add(const Call& call);
  // The run ends while learning: takes the token period even without the gaps' confirmation (a
  // short job of one collective per step). Returns state().
  State conclude();
  State state() const { return state_; }
  const StepPattern& pattern() const { return pattern_; }
  std::size_t calls() const { return calls_.size(); }
  void reset();

  // Exposed for tests. The smallest period p of tokens[from..] (repeats for >= 97% of the
  // positions, at least three times over), 0 if none.
  static std::size_t token_period(const std::vector<uint64_t>& tokens, std::size_t from);
  // The step period among multiples of `p` that the gaps before calls explain (one wide gap per
  // step); false if none does. `phase` is an index into gaps, relative to `from`.
  static bool gap_period(const std::vector<int64_t>& gaps, std::size_t from, std::size_t p,
                         std::size_t& period, std::size_t& phase);

 private:
  bool learn(bool unconfirmed_ok);

  std::vector<Call> calls_;
  std::size_t next_try_ = 24;
  State state_ = State::kLearning;
  StepPattern pattern_;
};

}  // namespace ncclwatch::shim

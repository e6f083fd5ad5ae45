// The job's steps, shared between ranks through the trace directory (docs/always-on.md, "Ranks
// that cannot learn take the job's steps"): the first rank that learns where steps start on its
// reference comm writes `<dir>/ncclwatch.<job>.steps`; a rank still learning, or counting seconds
// of the clock because its gaps stayed unclear, reads it and takes those steps. NCCL requires
// every rank of a communicator to issue the same collectives in the same order, so the collective
// with seq s on a comm is the same one on all of its ranks, and a step pattern (period, phase,
// the first collective's signature) learned on one rank holds on every rank of that comm.
//
// The file is untrusted input like the capture control file (capture_control.h: this user's
// regular file, not a symlink, one link, not writable by others, small), replaced atomically.
// Standard library and POSIX only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ncclwatch/capture_control.h"

namespace ncclwatch::format {

// The most collectives per step a notice may say (the learner's own periods are far below).
inline constexpr uint32_t kMaxNoticePeriod = 1u << 20;

struct JobSteps {
  uint64_t comm = 0;         // the reference comm's id (equal on all of its ranks; nonzero)
  uint32_t period = 0;       // collectives on it per step (>= 1)
  uint32_t phase = 0;        // steps start at seq % period == phase (< period)
  uint64_t start_token = 0;  // signature (op, count, type, op) of a step's first collective
  int64_t published_realtime_ns = 0;  // CLOCK_REALTIME when written (an earlier run's is older)
  int32_t rank = -1;                  // who learned it (-1: not known)

  bool same_steps(const JobSteps& o) const {
    return comm == o.comm && period == o.period && phase == o.phase && start_token == o.start_token;
  }
};

inline std::string job_steps_file_name(std::string_view job) {
  return "ncclwatch." + std::string(job) + ".steps";
}

inline std::string to_job_steps_text(const JobSteps& s) {
  std::string out = "ncclwatch-steps 1\n";
  out += "comm=" + std::to_string(s.comm) + "\n";
  out += "period=" + std::to_string(s.period) + "\n";
  out += "phase=" + std::to_string(s.phase) + "\n";
  out += "start_token=" + std::to_string(s.start_token) + "\n";
  out += "published_realtime_ns=" + std::to_string(s.published_realtime_ns) + "\n";
  out += "rank=" + std::to_string(s.rank) + "\n";
  return out;
}

// nullopt with *error set when the text is not a notice (every field is checked).
inline std::optional<JobSteps> parse_job_steps_text(std::string_view in, std::string* error) {
  const auto fail = [&](std::string why) -> std::optional<JobSteps> {
    if (error != nullptr) *error = std::move(why);
    return std::nullopt;
  };
  JobSteps s;
  unsigned seen = 0;  // one bit per required key
  std::string why = read_key_values(
      in, "ncclwatch-steps 1\n", "steps notice",
      [&](std::string_view key, std::string_view value) -> std::string {
        bool ok = true;
        if (key == "comm") {
          ok = parse_number(value, s.comm) && s.comm != 0;
          seen |= 1;
        } else if (key == "period") {
          ok = parse_number(value, s.period) && s.period >= 1 && s.period <= kMaxNoticePeriod;
          seen |= 2;
        } else if (key == "phase") {
          ok = parse_number(value, s.phase);
          seen |= 4;
        } else if (key == "start_token") {
          ok = parse_number(value, s.start_token);
          seen |= 8;
        } else if (key == "published_realtime_ns") {
          ok = parse_number(value, s.published_realtime_ns) && s.published_realtime_ns > 0;
          seen |= 16;
        } else if (key == "rank") {
          ok = parse_number(value, s.rank) && s.rank >= -1;
        }  // other keys: a newer writer's, ignored
        return ok ? std::string() : "bad " + std::string(key);
      });
  if (!why.empty()) return fail(std::move(why));
  if (seen != 31) return fail("comm, period, phase, start_token or published_realtime_ns missing");
  if (s.phase >= s.period) return fail("phase not below period");
  return s;
}

}  // namespace ncclwatch::format

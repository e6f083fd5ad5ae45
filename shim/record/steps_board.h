// The job's steps on the trace directory (ncclwatch/job_steps.h): the drain thread of a rank that
// learned its steps alone publishes them once, and the drain thread of a rank that has not (still
// learning, or counting seconds of the clock) reads what another rank published and takes it
// (step_summarizer.h, adopt). The file is looked at with one fstatat at most once a second, and
// read only when it changed; a notice written before this process started (less a slack for the
// hosts' clocks) is an earlier run's and is ignored. A bad file is one `ncclwatch:` line, once.
// Drain thread only (it allocates and makes syscalls).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ncclwatch/job_steps.h"
#include "record/shared_file.h"

namespace ncclwatch::shim {

class StepsBoard {
 public:
  static constexpr int64_t kFilePeriodNs = SharedFile::kLookPeriodNs;
  static constexpr int64_t kClockSlackNs = format::kClockSlackNs;

  // `dir` the trace directory, `job` the job id (a sanitized name part), `start_realtime_ns` the
  // process's start on CLOCK_REALTIME. Without the directory the board stays closed.
  void open(const std::string& dir, const std::string& job, int64_t start_realtime_ns);
  bool is_open() const { return file_.is_open(); }

  // Looks at the file if kFilePeriodNs of `now` (host clock) passed since the last look; returns
  // the newest valid notice of this run seen so far (nullopt: none). *line gets one `ncclwatch:`
  // line when the file is refused (once per process).
  const std::optional<format::JobSteps>& poll(int64_t now, std::string* line);
  // Writes the notice (`unique` names this writer's temporary file). false when it cannot; *line
  // then gets one `ncclwatch:` line (once).
  bool publish(const format::JobSteps& steps, const std::string& unique, std::string* line);
  // Forked child: forget the descriptor without closing the parent's (it is CLOEXEC anyway).
  void abandon() { file_.abandon(); }

 private:
  SharedFile file_;
  int64_t start_realtime_ns_ = 0;
  std::optional<format::JobSteps> current_;
  bool said_publish_ = false;
};

}  // namespace ncclwatch::shim

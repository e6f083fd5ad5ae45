// Where the drain thread finds capture requests (docs/always-on.md, "How a request reaches the
// ranks"): the segment's CaptureRequest (written by `ncclwatch capture` on this node), looked at
// every drain period, and the control file <dir>/ncclwatch.<job>.capture (every node), looked at
// with one fstatat at most once a second and read only when it changed. A bad file (another
// user's, a symlink, writable by others, too large, not a request) is one `ncclwatch:` line, once.
// A request made before this process started is an earlier run's (the same job id and directory)
// and is ignored. Capture by itself writes the file (post). Drain thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ncclwatch/capture_control.h"
#include "record/shared_file.h"

namespace ncclwatch::shim {

class CaptureInbox {
 public:
  static constexpr int64_t kFilePeriodNs = SharedFile::kLookPeriodNs;

  // `dir` the trace directory, `job` the job id (a sanitized name part), `start_realtime_ns` the
  // process's start on CLOCK_REALTIME.
  void open(const std::string& dir, const std::string& job, int64_t start_realtime_ns);

  // New requests: the segment's (when its id changed) and the control file's (when the file
  // changed, at most once per kFilePeriodNs of `now`, host clock). *line gets one `ncclwatch:`
  // line when the file is refused (once per process).
  std::vector<format::CaptureAsk> poll(const format::CaptureRequest& slot, int64_t now,
                                       std::string* line);
  // Asks every rank (capture by itself): writes the control file (`unique` names this writer's
  // temporary file). false when it cannot; *line then gets one `ncclwatch:` line (once).
  bool post(const format::CaptureAsk& ask, const std::string& unique, std::string* line);
  // Forked child: forget the descriptor without closing the parent's (it is CLOEXEC anyway).
  void abandon() { file_.abandon(); }

 private:
  bool fresh(const format::CaptureAsk& ask) const;
  void poll_file(std::vector<format::CaptureAsk>& out, int64_t now, std::string* line);

  SharedFile file_;
  int64_t start_realtime_ns_ = 0;
  uint64_t segment_id_ = 0;
  bool said_post_ = false;
};

}  // namespace ncclwatch::shim

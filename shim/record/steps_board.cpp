#include "record/steps_board.h"

namespace ncclwatch::shim {

void StepsBoard::open(const std::string& dir, const std::string& job, int64_t start_realtime_ns) {
  file_.open(dir, format::job_steps_file_name(job));
  start_realtime_ns_ = start_realtime_ns;
}

const std::optional<format::JobSteps>& StepsBoard::poll(int64_t now, std::string* line) {
  // Unchanged, or gone: what it said still holds for this run.
  const auto text = file_.changed_text(now, line);
  if (!text) return current_;
  std::string error;
  const auto steps = format::parse_job_steps_text(*text, &error);
  if (!steps) {
    file_.refuse(error, line);
    return current_;
  }
  if (format::made_in_this_run(steps->published_realtime_ns, start_realtime_ns_)) current_ = steps;
  return current_;
}

bool StepsBoard::publish(const format::JobSteps& steps, const std::string& unique,
                         std::string* line) {
  if (!file_.is_open()) return false;
  std::string error;
  if (file_.write(unique, format::to_job_steps_text(steps), &error)) {
    current_ = steps;
    return true;
  }
  if (!said_publish_ && line != nullptr) {
    said_publish_ = true;
    *line = "ncclwatch: other ranks cannot take this rank's steps: " + error + "\n";
  }
  return false;
}

}  // namespace ncclwatch::shim

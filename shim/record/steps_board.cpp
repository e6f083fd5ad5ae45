#include "record/steps_board.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ncclwatch::shim {

StepsBoard::~StepsBoard() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

void StepsBoard::open(const std::string& dir, const std::string& job, int64_t start_realtime_ns) {
  dir_ = dir;
  name_ = format::job_steps_file_name(job);
  start_realtime_ns_ = start_realtime_ns;
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

const std::optional<format::JobSteps>& StepsBoard::poll(int64_t now, std::string* line) {
  if (dir_fd_ < 0 || now < next_look_ns_) return current_;
  next_look_ns_ = now + kFilePeriodNs;
  struct stat st {};
  Seen now_seen;
  if (::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    now_seen = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                static_cast<int64_t>(st.st_size)};
  }
  if (now_seen == seen_) return current_;  // unchanged (or still missing)
  seen_ = now_seen;
  if (now_seen.size < 0) return current_;  // gone: what it said still holds for this run
  std::string error;
  std::optional<format::JobSteps> steps;
  if (const auto text = format::read_control_file(dir_fd_, name_, &error)) {
    steps = format::parse_job_steps_text(*text, &error);
  } else if (error.empty()) {
    return current_;  // removed between the two looks
  }
  if (!steps) {
    if (!said_ && line != nullptr) {
      said_ = true;
      *line = "ncclwatch: ignoring " + dir_ + "/" + name_ + ": " + error + "\n";
    }
    return current_;
  }
  // Compared without adding to the file's number (any int64 there: no overflow).
  if (steps->published_realtime_ns >= start_realtime_ns_ - kClockSlackNs) current_ = steps;
  return current_;
}

bool StepsBoard::publish(const format::JobSteps& steps, const std::string& unique,
                         std::string* line) {
  if (dir_fd_ < 0) return false;
  std::string error;
  if (format::write_small_file(dir_fd_, name_, unique, format::to_job_steps_text(steps), &error)) {
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

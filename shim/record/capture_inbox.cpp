#include "record/capture_inbox.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ncclwatch::shim {
namespace {

// Clocks of different hosts disagree a little (NTP): a request this much older than the
// process's start is still taken as meant for it.
constexpr int64_t kClockSlackNs = 10'000'000'000;

}  // namespace

CaptureInbox::~CaptureInbox() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

void CaptureInbox::open(const std::string& dir, const std::string& job, int64_t start_realtime_ns) {
  dir_ = dir;
  name_ = format::control_file_name(job);
  start_realtime_ns_ = start_realtime_ns;
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

bool CaptureInbox::fresh(const format::CaptureAsk& ask) const {
  return ask.requested_realtime_ns == 0 ||
         ask.requested_realtime_ns >= start_realtime_ns_ - kClockSlackNs;  // no overflow
}

std::vector<format::CaptureAsk> CaptureInbox::poll(const format::CaptureRequest& slot, int64_t now,
                                                   std::string* line) {
  std::vector<format::CaptureAsk> out;
  format::CaptureRequest r{};
  if (format::read_capture_request(slot, r) && r.version != 0 && r.id != 0 && r.id != segment_id_) {
    segment_id_ = r.id;
    format::CaptureAsk ask;
    ask.id = r.id;
    ask.unit = r.unit;
    ask.first = r.first;
    ask.count = r.count;
    ask.requested_realtime_ns = r.requested_realtime_ns;
    ask.trigger = r.trigger < static_cast<uint32_t>(format::WindowTrigger::kCount) &&
                          r.trigger != static_cast<uint32_t>(format::WindowTrigger::kWholeRun)
                      ? static_cast<format::WindowTrigger>(r.trigger)
                      : format::WindowTrigger::kOnDemand;
    const bool known_unit = r.unit == format::kCaptureSteps || r.unit == format::kCaptureSeconds;
    if (known_unit && r.count != 0 && fresh(ask)) out.push_back(ask);
  }
  if (dir_fd_ >= 0 && now >= next_file_ns_) {
    next_file_ns_ = now + kFilePeriodNs;
    poll_file(out, line);
  }
  return out;
}

bool CaptureInbox::post(const format::CaptureAsk& ask, const std::string& unique,
                        std::string* line) {
  if (dir_fd_ < 0) return false;
  std::string error;
  if (format::write_control_file(dir_fd_, name_, unique, ask, &error)) return true;
  if (!said_post_ && line != nullptr) {
    said_post_ = true;
    *line = "ncclwatch: capture by itself reaches this process only: " + error + "\n";
  }
  return false;
}

void CaptureInbox::poll_file(std::vector<format::CaptureAsk>& out, std::string* line) {
  struct stat st {};
  Seen now_seen;
  if (::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    now_seen = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                static_cast<int64_t>(st.st_size)};
  }
  if (now_seen == seen_) return;  // unchanged (or still missing)
  seen_ = now_seen;
  if (now_seen.size < 0) return;  // gone
  std::string error;
  std::optional<format::CaptureAsk> ask;
  if (const auto text = format::read_control_file(dir_fd_, name_, &error)) {
    ask = format::parse_control_text(*text, &error);
  } else if (error.empty()) {
    return;  // removed between the two looks
  }
  if (!ask) {
    if (!said_ && line != nullptr) {
      said_ = true;
      *line = "ncclwatch: ignoring " + dir_ + "/" + name_ + ": " + error + "\n";
    }
    return;
  }
  if (fresh(*ask)) out.push_back(*ask);
}

}  // namespace ncclwatch::shim

#include "record/capture_inbox.h"

namespace ncclwatch::shim {

void CaptureInbox::open(const std::string& dir, const std::string& job, int64_t start_realtime_ns) {
  file_.open(dir, format::control_file_name(job));
  start_realtime_ns_ = start_realtime_ns;
}

bool CaptureInbox::fresh(const format::CaptureAsk& ask) const {
  return ask.requested_realtime_ns == 0 ||
         format::made_in_this_run(ask.requested_realtime_ns, start_realtime_ns_);
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
  poll_file(out, now, line);
  return out;
}

bool CaptureInbox::post(const format::CaptureAsk& ask, const std::string& unique,
                        std::string* line) {
  if (!file_.is_open()) return false;
  std::string error;
  if (file_.write(unique, format::to_control_text(ask), &error)) return true;
  if (!said_post_ && line != nullptr) {
    said_post_ = true;
    *line = "ncclwatch: capture by itself reaches this process only: " + error + "\n";
  }
  return false;
}

void CaptureInbox::poll_file(std::vector<format::CaptureAsk>& out, int64_t now, std::string* line) {
  const auto text = file_.changed_text(now, line);
  if (!text) return;
  std::string error;
  const auto ask = format::parse_control_text(*text, &error);
  if (!ask) return file_.refuse(error, line);
  if (fresh(*ask)) out.push_back(*ask);
}

}  // namespace ncclwatch::shim

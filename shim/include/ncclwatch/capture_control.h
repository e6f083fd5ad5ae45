// How a capture request travels (docs/always-on.md, "How a request reaches the ranks"): as a
// CaptureRequest in each segment of this node (format.h) and as a control file in the trace
// directory for every node, `<dir>/ncclwatch.<job>.capture`. Used by the shim's drain thread
// (which reads both, and writes the file when it asks for a window by itself) and by
// `ncclwatch capture`. Standard library and POSIX only.
//
// The file is untrusted input (a shared directory: docs/threat-model.md): it is read only when it
// is a regular file of this user, not a symlink, with one link, not writable by group or others,
// and at most kMaxControlBytes; it is replaced atomically (a new file renamed over it), never
// written in place, and never through a symlink.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ncclwatch/format.h"
#include "ncclwatch/seqlock_copy.h"

namespace ncclwatch::format {

inline constexpr uint32_t kCaptureRecent = 3;  // the ring's recent records, up to now (a hang)
inline constexpr std::size_t kMaxControlBytes = 4096;
inline constexpr std::size_t kMaxTriggerText = 200;

// A request as the shim and the CLI hold it.
struct CaptureAsk {
  uint64_t id = 0;
  uint32_t unit = kCaptureSteps;  // kCaptureSteps, kCaptureSeconds, kCaptureRecent
  uint64_t first = 0;             // steps: first step; seconds: start (CLOCK_REALTIME ns, 0 = now)
  uint64_t count = 0;             // steps, or ns
  WindowTrigger trigger = WindowTrigger::kOnDemand;
  int64_t requested_realtime_ns = 0;
  std::string text;  // one line, what asked and why
};

inline const char* capture_trigger_word(WindowTrigger t) {
  switch (t) {
    case WindowTrigger::kWholeRun:
      return "whole-run";
    case WindowTrigger::kSchedule:
      return "schedule";
    case WindowTrigger::kOnDemand:
      return "on-demand";
    case WindowTrigger::kStepTime:
      return "step-time";
    case WindowTrigger::kWait:
      return "wait";
    case WindowTrigger::kHang:
      return "hang";
    case WindowTrigger::kCount:
      break;
  }
  return "on-demand";
}

inline std::string control_file_name(std::string_view job) {
  return "ncclwatch." + std::string(job) + ".capture";
}

// The control file's text: a first line naming the format, then key=value lines.
inline std::string to_control_text(const CaptureAsk& a) {
  std::string text = a.text.substr(0, kMaxTriggerText);
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  std::string out = "ncclwatch-capture 1\n";
  out += "id=" + std::to_string(a.id) + "\n";
  out += std::string("unit=") +
         (a.unit == kCaptureSeconds  ? "seconds"
          : a.unit == kCaptureRecent ? "recent"
                                     : "steps") +
         "\n";
  out += "first=" + std::to_string(a.first) + "\n";
  out += "count=" + std::to_string(a.count) + "\n";
  out += std::string("trigger=") + capture_trigger_word(a.trigger) + "\n";
  out += "requested_realtime_ns=" + std::to_string(a.requested_realtime_ns) + "\n";
  out += "text=" + text + "\n";
  return out;
}

// A request or notice written before this process started (less the hosts' clock disagreement,
// NTP) is an earlier run's with the same job id and directory. Compared without adding to the
// file's number (any int64 there: no overflow).
inline constexpr int64_t kClockSlackNs = 10'000'000'000;
inline bool made_in_this_run(int64_t realtime_ns, int64_t start_realtime_ns) {
  return realtime_ns >= start_realtime_ns - kClockSlackNs;
}

// A whole decimal number in `v` (nothing else), into `out`'s type.
template <typename T>
inline bool parse_number(std::string_view v, T& out) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && p == v.data() + v.size() && !v.empty();
}

// The shared files' text after its first line `first` (a format name and version): key=value
// lines, each handed to `take(key, value)`, which returns "" or why the value is bad. Returns ""
// or why the text is refused.
template <typename Take>
inline std::string read_key_values(std::string_view in, std::string_view first,
                                   std::string_view what, Take take) {
  if (in.size() > kMaxControlBytes) return "larger than 4 KiB";
  if (in.substr(0, first.size()) != first) return "not an ncclwatch " + std::string(what);
  in.remove_prefix(first.size());
  while (!in.empty()) {
    const auto nl = in.find('\n');
    if (nl == std::string_view::npos) return "last line not ended";
    const std::string_view line = in.substr(0, nl);
    in.remove_prefix(nl + 1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) return "a line without '='";
    std::string why = take(line.substr(0, eq), line.substr(eq + 1));
    if (!why.empty()) return why;
  }
  return {};
}

// nullopt with *error set when the text is not a request (every field is checked).
inline std::optional<CaptureAsk> parse_control_text(std::string_view in, std::string* error) {
  const auto fail = [&](std::string why) -> std::optional<CaptureAsk> {
    if (error != nullptr) *error = std::move(why);
    return std::nullopt;
  };
  CaptureAsk a;
  bool have_id = false, have_unit = false, have_count = false;
  std::string why = read_key_values(
      in, "ncclwatch-capture 1\n", "capture request",
      [&](std::string_view key, std::string_view value) -> std::string {
        if (key == "id") {
          if (!parse_number(value, a.id) || a.id == 0) return "bad id";
          have_id = true;
        } else if (key == "unit") {
          if (value == "steps") {
            a.unit = kCaptureSteps;
          } else if (value == "seconds") {
            a.unit = kCaptureSeconds;
          } else if (value == "recent") {
            a.unit = kCaptureRecent;
          } else {
            return "bad unit";
          }
          have_unit = true;
        } else if (key == "first") {
          if (!parse_number(value, a.first)) return "bad first";
        } else if (key == "count") {
          if (!parse_number(value, a.count)) return "bad count";
          have_count = true;
        } else if (key == "trigger") {
          bool found = false;
          for (uint8_t t = 0; t < static_cast<uint8_t>(WindowTrigger::kCount); ++t) {
            if (value == capture_trigger_word(static_cast<WindowTrigger>(t))) {
              a.trigger = static_cast<WindowTrigger>(t);
              found = true;
            }
          }
          if (!found || a.trigger == WindowTrigger::kWholeRun) return "bad trigger";
        } else if (key == "requested_realtime_ns") {
          if (!parse_number(value, a.requested_realtime_ns)) return "bad requested_realtime_ns";
        } else if (key == "text") {
          a.text = std::string(value.substr(0, kMaxTriggerText));
          for (char& c : a.text)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        }  // other keys: a newer writer's, ignored
        return {};
      });
  if (!why.empty()) return fail(std::move(why));
  if (!have_id || !have_unit || !have_count) return fail("id, unit or count missing");
  if (a.unit != kCaptureRecent && a.count == 0) return fail("count 0");
  return a;
}

// Reads `name` in the directory `dir_fd` if it is safe to trust (see the top of this file).
// nullopt: missing (*error empty) or refused (*error says why).
inline std::optional<std::string> read_control_file(int dir_fd, const std::string& name,
                                                    std::string* error) {
  error->clear();
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) *error = std::string("cannot open: ") + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) != 0) {
    *error = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    *error = "owned by another user";
  } else if (st.st_nlink != 1) {
    *error = "has other hard links";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    *error = "writable by others";
  } else if (st.st_size > static_cast<off_t>(kMaxControlBytes)) {
    *error = "larger than 4 KiB";
  } else {
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  if (!error->empty()) return std::nullopt;
  return text;
}

// Replaces `name` in `dir_fd` with `text`: written to a name of its own (unique per writer) and
// renamed over it, so that a reader sees the old file or the new one, never a part. false with
// *error set on failure. Also the job's steps file (job_steps.h).
inline bool write_small_file(int dir_fd, const std::string& name, const std::string& unique,
                             const std::string& text, std::string* error) {
  const std::string tmp = name + "." + unique + ".new";
  ::unlinkat(dir_fd, tmp.c_str(), 0);  // our own leftover (a name only we use)
  const int fd = ::openat(dir_fd, tmp.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  ::fchmod(fd, 0644);  // whatever the umask: group and others may read, only we write
  std::size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) ok = false;
  if (!ok || ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    *error = "cannot write " + name + ": " + std::strerror(errno);
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    return false;
  }
  return true;
}

// Replaces the control file `name` in `dir_fd` with the request (write_small_file).
inline bool write_control_file(int dir_fd, const std::string& name, const std::string& unique,
                               const CaptureAsk& ask, std::string* error) {
  return write_small_file(dir_fd, name, unique, to_control_text(ask), error);
}

// The segment's CaptureRequest (seqlock): the writer (`ncclwatch capture`) and the reader (the
// drain thread) of another process share it through the mapping.
inline void write_capture_request(CaptureRequest& slot, const CaptureAsk& a) {
  CaptureRequest r{};
  r.unit = a.unit;
  r.id = a.id;
  r.first = a.first;
  r.count = a.count;
  r.requested_realtime_ns = a.requested_realtime_ns;
  r.trigger = static_cast<uint32_t>(a.trigger);
  seqlock_store(slot, r);
}

inline bool read_capture_request(const CaptureRequest& slot, CaptureRequest& out) {
  return seqlock_load(slot, out);
}

}  // namespace ncclwatch::format

// A small file the ranks of a job share through the trace directory -- the capture control file
// (capture_inbox.h) and the job's steps (steps_board.h) -- as the drain thread watches it: looked
// at with one fstatat at most once per kLookPeriodNs (a bounded rate for a shared file system),
// read only when it changed and only when safe to trust (ncclwatch/capture_control.h,
// read_control_file), replaced atomically when written. A refused file is one `ncclwatch:` line,
// once per process. Drain thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ncclwatch::shim {

class SharedFile {
 public:
  static constexpr int64_t kLookPeriodNs = 1'000'000'000;

  SharedFile() = default;
  ~SharedFile();
  SharedFile(const SharedFile&) = delete;
  SharedFile& operator=(const SharedFile&) = delete;

  // `name` in the directory `dir`; without the directory the file stays closed.
  void open(const std::string& dir, const std::string& name);
  bool is_open() const { return dir_fd_ >= 0; }

  // The file's text when kLookPeriodNs of `now` (host clock) passed since the last look and the
  // file changed since (nullopt: not looked at, unchanged, missing, gone or refused; a refusal
  // is said in *line once).
  std::optional<std::string> changed_text(int64_t now, std::string* line);
  // Says once, in *line, that the file was ignored because of `why` (its text was no good).
  void refuse(const std::string& why, std::string* line);
  // Replaces the file with `text` (`unique` names this writer's temporary file); false with
  // *error set when it cannot.
  bool write(const std::string& unique, const std::string& text, std::string* error);
  // Forked child: forget the descriptor without closing the parent's (it is CLOEXEC anyway).
  void abandon() { dir_fd_ = -1; }

 private:
  int dir_fd_ = -1;
  std::string dir_;
  std::string name_;
  int64_t next_look_ns_ = 0;
  struct Seen {
    uint64_t dev = 0, ino = 0;
    int64_t mtime_ns = -1, size = -1;
    bool operator==(const Seen&) const = default;
  } seen_;
  bool said_ = false;
};

}  // namespace ncclwatch::shim

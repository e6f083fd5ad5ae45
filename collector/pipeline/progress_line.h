// Progress on stderr for commands that load and analyse a job (`report`, `run`, `diff`): only
// once the work has taken more than a second; a terminal gets one line rewritten in place, a
// log file a line every few seconds.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace ncclwatch::pipeline {

class ProgressLine {
  using Clock = std::chrono::steady_clock;

 public:
  ProgressLine(std::FILE* err, bool enabled)
      : err_(err), enabled_(enabled), tty_(isatty(fileno(err)) == 1) {}
  ~ProgressLine() {
    if (dirty_) std::fputc('\n', err_);
  }
  void show(const std::string& text) {
    if (!enabled_) return;
    auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (!tty_ && now - last_ < std::chrono::seconds(5)) return;
    last_ = now;
    double s = std::chrono::duration<double>(now - start_).count();
    if (tty_) {
      std::fprintf(err_, "\rncclwatch: %s (%.1f s)\033[K", text.c_str(), s);
      dirty_ = true;
    } else {
      std::fprintf(err_, "ncclwatch: %s (%.1f s)\n", text.c_str(), s);
    }
    std::fflush(err_);
  }

 private:
  std::FILE* err_;
  bool enabled_, tty_, dirty_ = false;
  Clock::time_point start_ = Clock::now(), last_{};
};

}  // namespace ncclwatch::pipeline

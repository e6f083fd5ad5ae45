// Reads a job's state for `ncclwatch status`: this node's shared-memory segments (read-only:
// header and in-flight slots only, never the writers' positions) and the trace files of a
// directory (incrementally: a second read() only reads what was appended since the first).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "live/job_status.h"

namespace ncclwatch::live {

struct StatusOptions {
  std::string job;  // empty: every job found (segments) / every trace in dir
  std::string dir;  // trace directory; empty: the trace files the segments name
};

class StatusReader {
 public:
  explicit StatusReader(StatusOptions options);
  ~StatusReader();
  StatusReader(const StatusReader&) = delete;
  StatusReader& operator=(const StatusReader&) = delete;

  JobStatus read();

 private:
  struct FileState;
  StatusOptions options_;
  std::map<std::string, std::unique_ptr<FileState>> files_;  // by path
};

}  // namespace ncclwatch::live
